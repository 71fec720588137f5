import { startHotPathApp } from '../support/hot-path-app-process.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The hot-path bench's app (test/support/hot-path-app.ts), as the bench runs it (built, in a
 * process of its own): its bare guard is the floor of a Redis-backed guard doing the
 * library's job, so it answers as the library does (the same RateLimit-Policy and RateLimit
 * headers, a 429 with Retry-After and the same body, on a key of the library's shape) on
 * either algorithm the bench runs; `flexible` limits through rate-limiter-flexible with no
 * headers; `quiet` is the library sending none.
 */
const APP = new URL('../../dist/test/support/hot-path-app.js', import.meta.url);

const redis = useRedisServer();

/**
 * What a client sees of a response, with the seconds that depend on when it was asked (the
 * reset, the retry) written as `<s>`: apps are asked seconds apart.
 */
async function seen(url: string, client: string) {
  const response = await fetch(url, { headers: { 'x-client': client } });
  const seconds = (text: string) => text.replace(/\d+/g, '<s>');
  return {
    status: response.status,
    policy: response.headers.get('ratelimit-policy'),
    rateLimit: response.headers.get('ratelimit')?.replace(/;t=\d+/, ';t=<s>') ?? null,
    retryAfter: response.headers.get('retry-after')?.replace(/^\d+$/, '<s>') ?? null,
    body: (await response.text()).replace(/retry in \d+ s|"retryAfter":\d+/g, seconds),
  };
}

/** One roomy request, then two of the hot client (limit one), on a fresh Redis. */
async function asked(adapter: string, variant: string, algorithm?: string) {
  await redis.admin.flushall();
  const env: Record<string, string> = algorithm ? { HOT_PATH_ALGORITHM: algorithm } : {};
  const app = await startHotPathApp(APP, adapter, variant, redis.server.url, { env });
  try {
    const responses = [
      await seen(`${app.url}/ping`, 'roomy'),
      await seen(`${app.url}/hot`, 'hot'),
      await seen(`${app.url}/hot`, 'hot'),
    ];
    return { responses, keys: (await redis.admin.keys('*')).sort() };
  } finally {
    await app.stop();
  }
}

describe.each(['express', 'fastify'])('the hot-path bench on %s', (adapter) => {
  it.each(['fixed-window', 'sliding-window-counter'])(
    'has the bare guard answer as the library does on %s: headers, 429 and keys',
    async (algorithm) => {
      const library = await asked(adapter, 'redis', algorithm);
      expect(library.responses.map((response) => response.status)).toEqual([200, 200, 429]);
      expect(library.responses[2].retryAfter).toBe('<s>');
      expect(library.keys).toEqual([
        `rl:{hot}:default:${algorithm === 'fixed-window' ? 'fw3' : 'swc2'}:PingController.hot`,
        `rl:{roomy}:default:${algorithm === 'fixed-window' ? 'fw3' : 'swc2'}:PingController.ping`,
      ]);
      expect(await asked(adapter, 'bare', algorithm)).toEqual(library);
    },
    60_000,
  );

  it('runs the fixed window unless told otherwise', async () => {
    expect((await asked(adapter, 'redis')).keys).toEqual([
      'rl:{hot}:default:fw3:PingController.hot',
      'rl:{roomy}:default:fw3:PingController.ping',
    ]);
  }, 60_000);

  it('has flexible admit then 429 on /hot through rate-limiter-flexible, with no headers', async () => {
    const { responses, keys } = await asked(adapter, 'flexible');
    expect(responses.map((response) => response.status)).toEqual([200, 200, 429]);
    for (const response of responses) {
      expect([response.policy, response.rateLimit, response.retryAfter]).toEqual([
        null,
        null,
        null,
      ]);
    }
    expect(keys).toEqual(['rlf:hot:hot', 'rlf:ping:roomy']);
  }, 60_000);

  it('has quiet decide as redis does, sending no RateLimit headers', async () => {
    const library = await asked(adapter, 'redis');
    const quiet = await asked(adapter, 'quiet');
    expect(quiet.responses.map((response) => response.status)).toEqual([200, 200, 429]);
    expect(quiet.keys).toEqual(library.keys);
    for (const response of quiet.responses) {
      expect([response.policy, response.rateLimit]).toEqual([null, null]);
    }
  }, 60_000);
});
