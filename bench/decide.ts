/**
 * What one decision costs on Redis and how many one Node process gets through: for each
 * algorithm with one policy, and for routes of two and three policies, the library's
 * `RateLimiter.consume` against raw ioredis EVALSHA of the very script it sends, against a
 * minimal script of the same semantics (test/support/minimal-scripts.ts; for a route, one call per
 * policy), and against
 * rate-limiter-flexible's RateLimiterRedis.consume and @nest-lab/throttler-storage-redis's
 * increment (both fixed windows). Every variant runs IN_FLIGHT decisions at a time over
 * KEYS client keys on one private redis-server, every decision admitted; Redis CPU comes
 * from CONFIG RESETSTAT, then INFO commandstats (all commands' usec / decisions). Variants
 * are interleaved round by round; medians are reported.
 *
 *   npm run bench:decide   (DECIDE_REQUESTS, DECIDE_ROUNDS, DECIDE_IN_FLIGHT, DECIDE_KEYS)
 */
import { Redis } from 'ioredis';
import { type Algorithm, ALGORITHMS, type RateLimitPolicy } from '../lib/index.js';
import { RateLimiter } from '../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import { resolvePolicies } from '../lib/config/resolved-policy.js';
import { composeDecideScript, scriptArguments } from '../lib/stores/redis/lua-script.js';
import { RedisStore } from '../lib/stores/redis/redis.store.js';
import { startRedisServer } from '../test/support/redis-server.js';
import { MINIMAL_SCRIPTS } from '../test/support/minimal-scripts.js';
import { peerFixedWindows } from './peer-fixed-windows.js';

const REQUESTS = Number(process.env.DECIDE_REQUESTS ?? 100_000);
const ROUNDS = Number(process.env.DECIDE_ROUNDS ?? 3);
const IN_FLIGHT = Number(process.env.DECIDE_IN_FLIGHT ?? 256);
const KEYS = Number(process.env.DECIDE_KEYS ?? 100_000);
/** High enough that every decision admits: the path that reads, decides and writes. */
const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;

type Call = (i: number) => Promise<unknown>;
interface Sample {
  perSecond: number;
  /** The scripts' own time: what Redis spent on the decisions. */
  redisMicros: number;
  /** Every command INFO lists, as the first figures were taken (see below). */
  allCommandsMicros: number;
  /** Redis's main thread CPU (INFO cpu): steadier than commandstats on a busy machine. */
  redisCpuMicros: number;
  /** This process's CPU per decision: the client side's cost, steadier than decisions/s. */
  nodeMicros: number;
}

async function redisCpuSeconds(): Promise<number> {
  const info = await admin.info('cpu');
  const field = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return field('used_cpu_user_main_thread') + field('used_cpu_sys_main_thread');
}

/**
 * The commands a client sends. INFO commandstats also lists the commands a script runs
 * (GET, SET, ...), whose time is already inside the script's: summing every line counts
 * it twice, and more so for scripts that make more calls.
 */
const TOP_LEVEL = /^(eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro)$/;

const policyOf = (algorithm: Algorithm, name = 'default'): RateLimitPolicy => ({
  name,
  algorithm,
  limit: LIMIT,
  window: WINDOW_MS,
});
const ROUTES: Record<string, RateLimitPolicy[]> = {
  'route: fixed window + sliding window counter': [
    policyOf('fixed-window', 'second'),
    policyOf('sliding-window-counter', 'minute'),
  ],
  'route: token bucket + fixed window + sliding window counter': [
    policyOf('token-bucket', 'burst'),
    policyOf('fixed-window', 'second'),
    policyOf('sliding-window-counter', 'minute'),
  ],
};

const redis = await startRedisServer();
const clientOptions = { enableAutoPipelining: true, maxRetriesPerRequest: 0 };
const client = new Redis(redis.url, clientOptions);
const admin = new Redis(redis.url);
// The deadline still runs on every call; a busy shared machine must not turn one into a 503.
const limiter = new RateLimiter(resolveOptions({ timeout: 10_000 }), new RedisStore(client, false));
const clientKey = (i: number) => `client-${i % KEYS}`;
const closers: (() => void)[] = [() => client.disconnect(), () => admin.disconnect()];

/** IN_FLIGHT loops calling `call` until `requests` have been decided; Redis usec per decision. */
async function measure(call: Call, requests: number): Promise<Sample> {
  await admin.flushall();
  await call(0); // loads the script, so every variant is measured warm
  await admin.config('RESETSTAT');
  const redisCpu = await redisCpuSeconds();
  let next = 0;
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  const loop = async () => {
    while (next < requests) await call(next++);
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const { user, system } = process.cpuUsage(cpu);
  const redisCpuUsed = (await redisCpuSeconds()) - redisCpu;
  const stats = await admin.info('commandstats');
  let micros = 0;
  let allMicros = 0;
  for (const [, command, usec] of stats.matchAll(/cmdstat_([^:]+):calls=\d+,usec=(\d+)/g)) {
    if (TOP_LEVEL.test(command)) micros += Number(usec);
    if (command !== 'info' && command !== 'config') allMicros += Number(usec);
  }
  return {
    perSecond: requests / seconds,
    redisMicros: micros / requests,
    allCommandsMicros: allMicros / requests,
    redisCpuMicros: (redisCpuUsed * 1e6) / requests,
    nodeMicros: (user + system) / requests,
  };
}

const MINIMAL = 'minimal script(s)';

/** Raw EVALSHA (ioredis defineCommand) of `lua`, on the same client as the library. */
function scriptCall(name: string, lua: string, args: (i: number) => (string | number)[]): Call {
  if (!(name in client)) client.defineCommand(name, { lua });
  const command = (
    client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>
  )[name].bind(client);
  return (i) => command(...args(i));
}

/** The variants of one row, by label; the library first. */
function variantsFor(label: string, policies: RateLimitPolicy[]): Record<string, Call> {
  const resolved = resolvePolicies(policies, { label, defaultScope: 'global' });
  const keysOf = (i: number) => resolved.map((policy) => `rl:{${clientKey(i)}}${policy.keySuffix}`);
  const variants: Record<string, Call> = {
    library: (i) => limiter.consume(clientKey(i), policies),
    'raw EVALSHA, library script': scriptCall(
      `bench:${label}`,
      // Costs of 1, the policies' own: the script holds them, as it does their values.
      composeDecideScript(
        resolved,
        'consume',
        'all',
        resolved.map(() => 1),
      ),
      (i) => {
        const request = {
          mode: 'consume' as const,
          keys: keysOf(i),
          policies: resolved,
          costs: resolved.map(() => 1),
          now: undefined,
          ttlFloorMs: 0,
          // As the library's calls carry one: never reached here.
          wantedUntil: Date.now() + 3_600_000,
        };
        return [resolved.length, ...scriptArguments(request, 'consume', 'consume', 'all')];
      },
    ),
  };
  // A route's floor: its policies' minimal scripts, one call each per decision, on the same
  // keys (so Redis holds as many keys as for the library's call).
  const minimal = resolved.map((policy, p) =>
    scriptCall(`minimal:${policy.algorithm}`, MINIMAL_SCRIPTS[policy.algorithm], (i) => [
      1,
      keysOf(i)[p],
      ...policy.scriptArgs,
      1,
    ]),
  );
  variants[MINIMAL] =
    minimal.length === 1 ? minimal[0] : (i) => Promise.all(minimal.map((call) => call(i)));
  if (label === 'fixed-window') {
    const peers = peerFixedWindows(client, redis.url, clientOptions, LIMIT, WINDOW_MS);
    closers.push(peers.close);
    for (const [name, call] of Object.entries(peers.variants)) {
      variants[name] = (i) => call(clientKey(i));
    }
  }
  return variants;
}

const rows: [string, Record<string, Call>][] = [
  ...ALGORITHMS.map((algorithm): [string, Record<string, Call>] => [
    algorithm,
    variantsFor(algorithm, [policyOf(algorithm)]),
  ]),
  ...Object.entries(ROUTES).map(([label, policies]): [string, Record<string, Call>] => [
    label,
    variantsFor(label, policies),
  ]),
];
const samples = new Map<string, Sample[]>();
try {
  // Round 0 warms the JIT, the connections and Redis's allocator, and is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [row, variants] of rows) {
      for (const [variant, call] of Object.entries(variants)) {
        const sample = await measure(call, round === 0 ? REQUESTS / 5 : REQUESTS);
        if (round === 0) continue;
        const id = `${row}|${variant}`;
        samples.set(id, [...(samples.get(id) ?? []), sample]);
        console.error(
          `round ${round} ${row} / ${variant}: ${sample.perSecond.toFixed(0)}/s, ${sample.redisMicros.toFixed(2)} us`,
        );
      }
    }
  }
} finally {
  closers.forEach((close) => close());
  await redis.stop();
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const medianOf = (row: string, variant: string, field: keyof Sample) =>
  median(samples.get(`${row}|${variant}`)!.map((sample) => sample[field]));

console.log(
  `\n${REQUESTS} decisions per variant, ${IN_FLIGHT} in flight, ${KEYS} keys, median of ${ROUNDS} rounds\n`,
);
const columns = [
  'row',
  'variant',
  'decisions/s',
  'vs raw EVALSHA',
  'Node µs',
  'Redis µs (scripts)',
  'vs minimal',
  'Redis µs (all commands)',
  'vs minimal',
  'Redis CPU µs',
  'vs minimal',
];
console.log(`| ${columns.join(' | ')} |\n|${columns.map(() => '---|').join('')}`);
const REDIS_FIELDS = ['redisMicros', 'allCommandsMicros', 'redisCpuMicros'] as const;
for (const [row, variants] of rows) {
  const raw = medianOf(row, 'raw EVALSHA, library script', 'perSecond');
  const floor = (field: keyof Sample) => medianOf(row, MINIMAL, field);
  for (const variant of Object.keys(variants)) {
    const at = (field: keyof Sample) => medianOf(row, variant, field);
    const redisCells = REDIS_FIELDS.map(
      (field) => `${at(field).toFixed(2)} | ${(at(field) / floor(field)).toFixed(2)}x`,
    );
    console.log(
      `| ${row} | ${variant} | ${at('perSecond').toFixed(0)} | ${(at('perSecond') / raw).toFixed(2)}x | ` +
        `${at('nodeMicros').toFixed(1)} | ${redisCells.join(' | ')} |`,
    );
  }
}
