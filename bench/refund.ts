/**
 * What giving a charge back costs Redis (the guard's give-back for policies that count by
 * outcome, and RateLimiter.refund), per algorithm, beside what the charge itself cost: one
 * Node process, REFUND_IN_FLIGHT (256) calls at a time, one private redis-server, every
 * consume admitted (a client's hourly budget of 1,000). Two key populations: fresh keys (the
 * refunded charge is the key's first, as a client's first login) and keys present (REFUND_PRESENT_KEYS client keys charged REFUND_PRIOR times each before the count,
 * then charged and given back about REFUND_REQUESTS / REFUND_PRESENT_KEYS times each). Each
 * measurement runs REFUND_REQUESTS consumes, then as many refunds of them, apart: Redis's
 * main-thread CPU (INFO cpu, less what it spends idle) per consume and per refund, and the
 * scripts' own time (INFO commandstats, EVAL and EVALSHA). Algorithms and populations are
 * interleaved over REFUND_ROUNDS rounds, in an order rotated each round; medians.
 *
 *   npm run bench:refund   (REFUND_REQUESTS, REFUND_ROUNDS, REFUND_IN_FLIGHT,
 *                           REFUND_PRESENT_KEYS, REFUND_PRIOR)
 */
import { Redis } from 'ioredis';
import { type Algorithm, ALGORITHMS, type RateLimitPolicy } from '../lib/index.js';
import { RateLimiter } from '../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import { RedisStore } from '../lib/stores/redis/redis.store.js';
import {
  type RedisServer,
  sendRawCommand,
  startRedisServer,
} from '../test/support/redis-server.js';

const REQUESTS = Number(process.env.REFUND_REQUESTS ?? 40_000);
const ROUNDS = Number(process.env.REFUND_ROUNDS ?? 5);
const IN_FLIGHT = Number(process.env.REFUND_IN_FLIGHT ?? 256);
const PRESENT_KEYS = Number(process.env.REFUND_PRESENT_KEYS ?? REQUESTS / 50);
const PRIOR = Number(process.env.REFUND_PRIOR ?? 5);
const IDLE_MS = 500;
const POPULATIONS = ['fresh keys', 'keys present'] as const;
type Population = (typeof POPULATIONS)[number];

interface Counters {
  readonly cpuUs: number;
  readonly scriptUs: number;
}
interface Figures {
  readonly consumeCpuUs: number;
  readonly refundCpuUs: number;
  readonly consumeScriptUs: number;
  readonly refundScriptUs: number;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function counters(redis: RedisServer): Promise<Counters> {
  const stats = await sendRawCommand(redis.port, ['INFO', 'commandstats']);
  const usec = (name: string) =>
    Number(new RegExp(`cmdstat_${name}:.*?usec=(\\d+)`).exec(stats)?.[1] ?? 0);
  const cpu = await sendRawCommand(redis.port, ['INFO', 'cpu']);
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)![1]);
  return {
    cpuUs: (seconds('used_cpu_user_main_thread') + seconds('used_cpu_sys_main_thread')) * 1e6,
    scriptUs: usec('eval') + usec('evalsha'),
  };
}

/** Runs `call` on every key, IN_FLIGHT at a time. */
async function everyKey(keys: readonly string[], call: (key: string) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < keys.length) await call(keys[next++]);
    }),
  );
}

/** Redis's CPU and script time for `run`, less the main thread's idle CPU over as long. */
async function measured(redis: RedisServer, idlePerMs: number, run: () => Promise<void>) {
  const before = await counters(redis);
  const startedAt = performance.now();
  await run();
  const tookMs = performance.now() - startedAt;
  const after = await counters(redis);
  return {
    cpuUs: (after.cpuUs - before.cpuUs - idlePerMs * tookMs) / REQUESTS,
    scriptUs: (after.scriptUs - before.scriptUs) / REQUESTS,
  };
}

async function measure(
  redis: RedisServer,
  limiter: RateLimiter,
  algorithm: Algorithm,
  population: Population,
  round: number,
): Promise<Figures> {
  const policy: RateLimitPolicy = {
    name: `${algorithm}-${round}`,
    algorithm,
    limit: 1_000,
    window: '1h',
  };
  const keys =
    population === 'fresh keys'
      ? Array.from({ length: REQUESTS }, (_, i) => `fresh-${round}-${i}`)
      : Array.from({ length: REQUESTS }, (_, i) => `present-${round}-${i % PRESENT_KEYS}`);
  if (population === 'keys present') {
    const prior = Array.from({ length: PRESENT_KEYS * PRIOR }, (_, i) => keys[i % PRESENT_KEYS]);
    await everyKey(prior, (key) => limiter.consume(key, policy));
  }
  const idleFrom = await counters(redis);
  await sleep(IDLE_MS);
  const idlePerMs = ((await counters(redis)).cpuUs - idleFrom.cpuUs) / IDLE_MS;
  const consume = await measured(redis, idlePerMs, () =>
    everyKey(keys, async (key) => {
      if (!(await limiter.consume(key, policy)).allowed) throw new Error('denied');
    }),
  );
  const refund = await measured(redis, idlePerMs, () =>
    everyKey(keys, (key) => limiter.refund(key, policy)),
  );
  return {
    consumeCpuUs: consume.cpuUs,
    refundCpuUs: refund.cpuUs,
    consumeScriptUs: consume.scriptUs,
    refundScriptUs: refund.scriptUs,
  };
}

const redis = await startRedisServer();
const client = new Redis(redis.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 });
await new Promise((resolve) => client.once('ready', resolve));
const store = new RedisStore(client, true);
const limiter = new RateLimiter(resolveOptions({ timeout: 10_000, denyCache: false }), store);
const cells = ALGORITHMS.flatMap((algorithm) =>
  POPULATIONS.map((population) => ({ algorithm, population })),
);
const results = new Map<string, Figures[]>(cells.map((cell) => [JSON.stringify(cell), []]));
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[(i + round) % cells.length];
      const figures = await measure(redis, limiter, cell.algorithm, cell.population, round);
      results.get(JSON.stringify(cell))!.push(figures);
      console.error(`round ${round + 1} ${JSON.stringify(cell)}: ${JSON.stringify(figures)}`);
    }
  }
} finally {
  await limiter.onApplicationShutdown();
  await store.close();
  await redis.stop();
}

console.log(
  `Redis per request, one process, ${IN_FLIGHT} in flight, ${REQUESTS} consumes then as many ` +
    `refunds per cell, median of ${ROUNDS} interleaved rounds:\n`,
);
console.log(
  '| algorithm | keys | consume: Redis CPU µs | refund: Redis CPU µs | refund / consume | consume: EVALSHA µs | refund: EVALSHA µs |',
);
console.log('|---|---|---|---|---|---|---|');
for (const cell of cells) {
  const rounds = results.get(JSON.stringify(cell))!;
  const of = (field: keyof Figures) => median(rounds.map((figures) => figures[field]));
  const ratio = median(rounds.map((figures) => figures.refundCpuUs / figures.consumeCpuUs));
  console.log(
    `| ${cell.algorithm} | ${cell.population} | ${of('consumeCpuUs').toFixed(2)} | ` +
      `${of('refundCpuUs').toFixed(2)} | ${ratio.toFixed(2)}x | ${of('consumeScriptUs').toFixed(2)} | ` +
      `${of('refundScriptUs').toFixed(2)} |`,
  );
}
