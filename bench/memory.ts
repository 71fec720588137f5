/**
 * Redis memory per client key, per algorithm: a flood of distinct clients (IPv4 keys, one
 * request each) through the library's RateLimiter on a fresh redis-server, measured as the
 * INFO memory delta divided by the keys written, beside MEMORY USAGE of one key. Policies
 * allow one request per day, so that no key expires during the run (the run fails if one
 * did). A sliding window log keeps one entry per admitted request, so it is measured full
 * as well.
 * Options: --clients (default 1,000,000), --log-limit (default 100).
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ALGORITHMS, RateLimiter, type RateLimitPolicy, RedisStore } from '../lib/index.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import { startRedisServer } from '../test/support/redis-server.js';

const { values: options } = parseArgs({
  options: {
    clients: { type: 'string', default: '1000000' },
    'log-limit': { type: 'string', default: '100' },
  },
});
const CLIENTS = Number(options.clients);
const LOG_LIMIT = Number(options['log-limit']);
/** Decisions in flight at once; ioredis pipelines them. */
const BATCH = 2_000;

/** 10.0.0.0/8 holds 16.7 million: distinct, readable keys, as the default keyBy writes them. */
const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

const server = await startRedisServer();
const client = new Redis(server.url, { enableAutoPipelining: true });
const limiter = new RateLimiter(resolveOptions({ timeout: 60_000 }), new RedisStore(client, false));

async function usedMemory(): Promise<number> {
  const info = await client.info('memory');
  return Number(/^used_memory:(\d+)/m.exec(info)![1]);
}

/** Bytes per key after `clients` clients sent `requests` requests each under `policy`. */
async function measure(policy: RateLimitPolicy, clients: number, requests: number) {
  await client.flushall();
  const before = await usedMemory();
  for (let start = 0; start < clients; start += BATCH) {
    const batch = [];
    for (let i = start; i < Math.min(start + BATCH, clients); i++) {
      batch.push(
        (async () => {
          for (let n = 0; n < requests; n++) await limiter.consume(ipOf(i), policy);
        })(),
      );
    }
    await Promise.all(batch);
  }
  const after = await usedMemory();
  const keys = await client.dbsize();
  if (keys !== clients) throw new Error(`expected ${clients} keys, found ${keys}`);
  const [sampleKey] = (await client.scan(0, 'COUNT', 10))[1];
  const usage = Number(await client.call('MEMORY', 'USAGE', sampleKey, 'SAMPLES', '0'));
  return { perKey: (after - before) / clients, usage, sampleKey };
}

const rows: string[] = [];
try {
  const runs: [string, RateLimitPolicy, number, number][] = ALGORITHMS.map((algorithm) => [
    algorithm,
    // One request must keep every key for the run: a bucket's key lives as long as its
    // refill, so its single token must take long to come back.
    { algorithm, limit: 1, window: '1d' },
    CLIENTS,
    1,
  ]);
  runs.push([
    `sliding-window-log, ${LOG_LIMIT} requests`,
    { algorithm: 'sliding-window-log', limit: LOG_LIMIT, window: '1d' },
    Math.max(1, Math.floor(CLIENTS / LOG_LIMIT)),
    LOG_LIMIT,
  ]);
  for (const [label, policy, clients, requests] of runs) {
    const started = performance.now();
    const { perKey, usage, sampleKey } = await measure(policy, clients, requests);
    const seconds = ((performance.now() - started) / 1_000).toFixed(1);
    console.log(`${label}: ${clients} keys in ${seconds} s, e.g. ${sampleKey}`);
    rows.push(`| ${label} | ${clients} | ${perKey.toFixed(0)} | ${usage} |`);
  }
} finally {
  client.disconnect();
  await server.stop();
}
console.log(
  `\n| algorithm | keys | bytes per key (INFO used_memory delta / keys) | MEMORY USAGE of one key |\n|---|---|---|---|`,
);
for (const row of rows) console.log(row);
