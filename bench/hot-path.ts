/**
 * Hot-path cost: requests/s of the same app with no limiter, with a bare one-script guard
 * (the floor for any Redis-backed guard), with the library on Redis and on the embedded
 * store, measured in one run and reported as ratios to no limiter (the target: a guarded
 * route keeps at least 80%). Variants are interleaved round by round and each round's
 * ratios taken against that round's own baseline; the median round is reported, since
 * this 2-core machine (load generator, app and Redis on it together) is noisy.
 *
 *   npm run bench:hot-path   (HOT_PATH_SECONDS, HOT_PATH_ROUNDS, HOT_PATH_CONNECTIONS to tune)
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startRedisServer } from '../test/support/redis-server.js';

const SECONDS = Number(process.env.HOT_PATH_SECONDS ?? 5);
const ROUNDS = Number(process.env.HOT_PATH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.HOT_PATH_CONNECTIONS ?? 32);
const VARIANTS = ['none', 'bare', 'redis', 'memory'] as const;
type Variant = (typeof VARIANTS)[number];

async function startApp(variant: Variant, redisUrl: string) {
  const app = spawn(
    process.execPath,
    [fileURLToPath(new URL('./hot-path-app.js', import.meta.url))],
    {
      env: { ...process.env, HOT_PATH_VARIANT: variant, REDIS_URL: redisUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  for await (const chunk of app.stdout) {
    output += String(chunk);
    const match = /listening (\d+)/.exec(output);
    if (match) return { port: Number(match[1]), stop: () => app.kill() };
  }
  throw new Error(`hot-path app (${variant}) exited before listening`);
}

/**
 * Requests/s with CONNECTIONS keep-alive connections for `seconds`, and how many responses
 * came without a RateLimit header: admitted by failing open, with no decision behind them.
 * Any non-2xx fails the run.
 */
async function load(port: number, seconds: number): Promise<{ rate: number; failedOpen: number }> {
  let undecided = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/ping`,
    connections: CONNECTIONS,
    duration: seconds,
    // Every variant pays for this callback alike, so the ratios stay comparable.
    requests: [
      {
        onResponse: (_status, _body, _context, headers = {}) => {
          if (!Object.keys(headers).some((name) => name.toLowerCase() === 'ratelimit')) undecided++;
        },
      },
    ],
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${result.non2xx} non-2xx responses and ${result.errors} errors`);
  }
  return { rate: result.requests.average, failedOpen: undecided };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const redis = await startRedisServer();
const rates: Record<Variant, number[]> = { none: [], bare: [], redis: [], memory: [] };
const LIMITED: ReadonlySet<Variant> = new Set(['redis', 'memory']);
const failedOpen: Record<Variant, number> = { none: 0, bare: 0, redis: 0, memory: 0 };
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const variant of VARIANTS) {
      const app = await startApp(variant, redis.url);
      try {
        await load(app.port, 1); // warm-up: JIT, connections, script load
        const { rate, failedOpen: undecided } = await load(app.port, SECONDS);
        rates[variant].push(rate);
        failedOpen[variant] += undecided;
        console.log(
          `round ${round} ${variant.padEnd(6)} ${rate.toFixed(0)} req/s` +
            (LIMITED.has(variant) ? `, ${undecided} admitted failing open` : ''),
        );
      } finally {
        app.stop();
      }
    }
  }
} finally {
  await redis.stop();
}
console.log(
  '\n| variant | median req/s | median of per-round ratios to no limiter | admitted failing open, all rounds |\n|---|---|---|---|',
);
for (const variant of VARIANTS) {
  const ratios = rates[variant].map((rate, round) => rate / rates.none[round]);
  const undecided = LIMITED.has(variant) ? String(failedOpen[variant]) : 'n/a';
  console.log(
    `| ${variant} | ${median(rates[variant]).toFixed(0)} | ${(100 * median(ratios)).toFixed(1)}% | ${undecided} |`,
  );
}
