import { startHotPathApp } from '../support/hot-path-app-process.js';
import { useRedisServer } from '../support/redis-fixture.js';

/**
 * The hot-path bench's bare guard (test/support/hot-path-app.ts) is the floor of a Redis-backed
 * guard doing the library's job: the README says it answers with the same RateLimit-Policy
 * and RateLimit headers, a 429 with Retry-After and the same body, on a key of the library's
 * shape. Both apps, as the bench runs them (built, in a process of their own), asked the
 * same requests.
 */
const APP = new URL('../../dist/test/support/hot-path-app.js', import.meta.url);

const redis = useRedisServer();

/**
 * What a client sees of a response, with the seconds that depend on when it was asked (the
 * reset, the retry) written as `<s>`: both apps are asked seconds apart.
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

describe.each(['express', 'fastify'])('the hot-path bench on %s', (adapter) => {
  it('has the bare guard answer as the library does: headers, 429 and keys', async () => {
    const asked = async (variant: string) => {
      await redis.admin.flushall();
      const app = await startHotPathApp(APP, adapter, variant, redis.server.url);
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
    };
    const library = await asked('redis');
    expect(library.responses.map((response) => response.status)).toEqual([200, 200, 429]);
    expect(library.responses[2].retryAfter).toBe('<s>');
    expect(await asked('bare')).toEqual(library);
  }, 60_000);
});
