/**
 * What one decision costs on Redis and how many one Node process gets through: for each
 * algorithm with one policy, and for routes of two and three policies, the library's
 * `RateLimiter.consume` against raw ioredis EVALSHA of the very script it sends, against a
 * minimal script of the same semantics (test/support/minimal-scripts.ts; for a route, one
 * call per policy), and, for the fixed window, against rate-limiter-flexible's
 * RateLimiterRedis.consume and @nest-lab/throttler-storage-redis's increment. Each on two key
 * populations: fresh keys (every decision a new client key) and keys present (PRESENT_KEYS
 * client keys, each decided once before the count starts, then about REQUESTS / PRESENT_KEYS
 * decisions each: a client making many requests, the common case). Every variant runs
 * IN_FLIGHT decisions at a time on one private redis-server, every decision admitted.
 * Redis's cost per decision is its main thread's CPU (INFO cpu) and the top-level scripts'
 * time (INFO commandstats, EVAL and EVALSHA lines only: it also lists the commands run
 * inside scripts, whose time is already in theirs). Variants and populations are
 * interleaved round by round, a row's variants in an order rotated each round; medians are
 * reported, with ratios to the row's reference (rate-limiter-flexible for the fixed window,
 * else the minimal script).
 *
 * The row 'clients: fixed-window' is what the client library costs: the library's fixed window
 * through each client it supports (ioredis 6, the reference; iovalkey, node-redis 6 and 5,
 * Valkey GLIDE), each on a client of its own with that library's defaults, as an app hands it
 * over. ioredis 5
 * is left out: installed here as a second copy (`ioredis5`), its clients would take their own
 * methods, not the Command path an app that installed ioredis 5 as `ioredis` gets.
 *
 * DECIDE_BASELINE=<another build's dist/lib> adds that build's library as a variant (e.g.
 * /tmp/base/dist/lib of an older commit), measured in the same interleaved run, and a second
 * table of the library against it (medians of each round's ratio); a build from before the
 * lib/ restructure (#18: lib/limiter, lib/config, lib/stores/redis) is found at its old paths.
 * Its client comes from the ioredis that build resolves: installed in it (`npm ci` there), its
 * own copy, as each app has. Code shared by variants runs as V8 tuned it to all their replies:
 * for the fairest comparison of two builds, DECIDE_VARIANTS='library,library (baseline)' runs
 * those two alone, each on an ioredis copy of its own.
 *
 *   npm run bench:decide   (DECIDE_REQUESTS, DECIDE_ROUNDS, DECIDE_IN_FLIGHT,
 *                           DECIDE_PRESENT_KEYS, DECIDE_ROWS and DECIDE_VARIANTS:
 *                           labels, comma-separated; DECIDE_BASELINE)
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type * as IoRedis from 'ioredis';
import { Redis } from 'ioredis';
import { type Algorithm, ALGORITHMS, type RateLimitPolicy } from '../lib/index.js';
import { RateLimiter } from '../lib/limiter/rate-limiter.service.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import { resolvePolicies } from '../lib/config/resolved-policy.js';
import { composeDecideScript, scriptArguments } from '../lib/stores/redis/lua-script.js';
import { RedisStore } from '../lib/stores/redis/redis.store.js';
import { startRedisServer } from '../test/support/redis-server.js';
import { MINIMAL_SCRIPTS } from '../test/support/minimal-scripts.js';
import { clientOf, REDIS_CLIENTS } from '../test/support/redis-clients.js';
import { peerFixedWindows } from './peer-fixed-windows.js';

const REQUESTS = Number(process.env.DECIDE_REQUESTS ?? 100_000);
const ROUNDS = Number(process.env.DECIDE_ROUNDS ?? 3);
const IN_FLIGHT = Number(process.env.DECIDE_IN_FLIGHT ?? 256);
const PRESENT_KEYS = Number(process.env.DECIDE_PRESENT_KEYS ?? REQUESTS / 50);
const ONLY = process.env.DECIDE_ROWS?.split(',');
const ONLY_VARIANTS = process.env.DECIDE_VARIANTS?.split(',');
const BASELINE = process.env.DECIDE_BASELINE;
/**
 * A client's hourly budget, as a user would set one, high enough that every decision admits
 * (a key is decided at most about REQUESTS / PRESENT_KEYS + 1 times a run): the path that
 * reads, decides and writes, with realistic answers (remaining and reset fit the scripts'
 * one-integer reply, lua/prelude.lua).
 */
const LIMIT = 1_000;
/** An hour: a window edge passes during a variant's run about once in 3,600. */
const WINDOW_MS = 3_600_000;
const POPULATIONS = ['fresh keys', 'keys present'] as const;
type Population = (typeof POPULATIONS)[number];

/** Decides for the client key it is given. */
type Call = (clientKey: string) => Promise<unknown>;
interface Sample {
  perSecond: number;
  /** The top-level scripts' own time (commandstats). */
  redisMicros: number;
  /** Redis's main thread CPU (INFO cpu): all it spent, reading and writing sockets too. */
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
 * (GET, SET, ...), whose time is already inside the script's: summing every line would count
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
const options = resolveOptions({ timeout: 10_000 });
// A client of its own, as the baseline's: neither build's calls wait in another variant's
// auto-pipeline, nor does either share its client with the peers.
const libraryClient = new Redis(redis.url, clientOptions);
const limiter = new RateLimiter(options, new RedisStore(libraryClient, false));
const closers: (() => unknown)[] = [
  () => client.disconnect(),
  () => libraryClient.disconnect(),
  () => admin.disconnect(),
];
let baseline: RateLimiter | undefined;
if (BASELINE) {
  /** The first of `paths` the build has (now, then before the restructure). */
  const load = async (...paths: string[]) =>
    import(`${BASELINE}/${paths.find((path) => existsSync(`${BASELINE}/${path}`)) ?? paths[0]}`);
  const { RateLimiter: Limiter } = await load(
    'limiter/rate-limiter.service.js',
    'rate-limiter.service.js',
  );
  const { resolveOptions: resolve } = await load(
    'config/resolved-options.js',
    'resolved-options.js',
  );
  const { RedisStore: Store } = await load('stores/redis/redis.store.js', 'stores/redis.store.js');
  // A client of its own, so that neither build's calls wait in the other's auto-pipeline.
  const { Redis: BaselineRedis } = createRequire(`${BASELINE}/`)('ioredis') as typeof IoRedis;
  const own = new BaselineRedis(redis.url, clientOptions);
  closers.push(() => own.disconnect());
  baseline = new Limiter(resolve({ timeout: 10_000 }), new Store(own, false)) as RateLimiter;
}

/** IN_FLIGHT loops at a time, `count` calls in all, the i-th for `key(i)`. */
async function run(call: Call, count: number, key: (i: number) => string): Promise<void> {
  let next = 0;
  const loop = async () => {
    while (next < count) await call(key(next++));
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, loop));
}

/** `requests` decisions of `call` on `population`; Redis's and Node's cost per decision. */
async function measure(call: Call, requests: number, population: Population): Promise<Sample> {
  await admin.flushall();
  const present = (i: number) => `client-${i % PRESENT_KEYS}`;
  // Loads the script, so every variant is measured warm; for keys present, writes them all.
  if (population === 'fresh keys') await call('warm-up');
  else await run(call, PRESENT_KEYS, present);
  await admin.config('RESETSTAT');
  const redisCpu = await redisCpuSeconds();
  const started = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  await run(call, requests, population === 'fresh keys' ? (i) => `client-${i}` : present);
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const { user, system } = process.cpuUsage(cpu);
  const redisCpuUsed = (await redisCpuSeconds()) - redisCpu;
  const stats = await admin.info('commandstats');
  let micros = 0;
  for (const [, command, usec] of stats.matchAll(/cmdstat_([^:]+):calls=\d+,usec=(\d+)/g)) {
    if (TOP_LEVEL.test(command)) micros += Number(usec);
  }
  return {
    perSecond: requests / seconds,
    redisMicros: micros / requests,
    redisCpuMicros: (redisCpuUsed * 1e6) / requests,
    nodeMicros: (user + system) / requests,
  };
}

const MINIMAL = 'minimal script(s)';

/** Raw EVALSHA (ioredis defineCommand) of `lua`, on the same client as the library. */
function scriptCall(
  name: string,
  lua: string,
  args: (clientKey: string) => (string | number)[],
): Call {
  if (!(name in client)) client.defineCommand(name, { lua });
  const command = (
    client as unknown as Record<string, (...a: (string | number)[]) => Promise<unknown>>
  )[name].bind(client);
  return (clientKey) => command(...args(clientKey));
}

/** The variants of one row, by label; the library first. */
function variantsFor(label: string, policies: RateLimitPolicy[]): Record<string, Call> {
  const resolved = resolvePolicies(policies, { label, defaultScope: 'global' });
  const keysOf = (clientKey: string) =>
    resolved.map((policy) => `rl:{${clientKey}}${policy.keySuffix}`);
  const variants: Record<string, Call> = {
    library: (clientKey) => limiter.consume(clientKey, policies),
    ...(baseline && { 'library (baseline)': (clientKey) => baseline.consume(clientKey, policies) }),
    'raw EVALSHA, library script': scriptCall(
      `bench:${label}`,
      // Costs of 1, the policies' own: the script holds them, as it does their values.
      composeDecideScript(
        resolved,
        'consume',
        'all',
        resolved.map(() => 1),
      ),
      (clientKey) => {
        const request = {
          mode: 'consume' as const,
          keys: keysOf(clientKey),
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
    scriptCall(`minimal:${policy.algorithm}`, MINIMAL_SCRIPTS[policy.algorithm], (clientKey) => [
      1,
      keysOf(clientKey)[p],
      ...policy.scriptArgs,
      1,
    ]),
  );
  variants[MINIMAL] =
    minimal.length === 1
      ? minimal[0]
      : (clientKey) => Promise.all(minimal.map((call) => call(clientKey)));
  if (label === 'fixed-window') {
    const peers = peerFixedWindows(client, redis.url, clientOptions, LIMIT, WINDOW_MS);
    closers.push(peers.close);
    Object.assign(variants, peers.variants);
  }
  return variants;
}

const CLIENTS_ROW = 'clients: fixed-window';
const onClient = (name: string) => `library on ${name}`;

/** The library's fixed window through each client library, each on a client of its own. */
async function clientVariants(): Promise<Record<string, Call>> {
  const policies = [policyOf('fixed-window')];
  const variants: Record<string, Call> = {};
  for (const name of REDIS_CLIENTS.filter((client) => client !== 'ioredis 5')) {
    const made = await clientOf(name, redis.url);
    closers.push(() => made.close());
    await made.ready();
    const own = new RateLimiter(options, new RedisStore(made.client, false));
    variants[onClient(name)] = (clientKey) => own.consume(clientKey, policies);
  }
  return variants;
}

const FLEXIBLE = 'rate-limiter-flexible';
/** What a row's variants are compared with. */
const referenceOf = (row: string) =>
  row === 'fixed-window' ? FLEXIBLE : row === CLIENTS_ROW ? onClient(REDIS_CLIENTS[0]) : MINIMAL;

const allRows: [string, Record<string, Call>][] = [
  ...ALGORITHMS.map((algorithm): [string, Record<string, Call>] => [
    algorithm,
    variantsFor(algorithm, [policyOf(algorithm)]),
  ]),
  ...Object.entries(ROUTES).map(([label, policies]): [string, Record<string, Call>] => [
    label,
    variantsFor(label, policies),
  ]),
];
if (!ONLY || ONLY.includes(CLIENTS_ROW)) allRows.push([CLIENTS_ROW, await clientVariants()]);
const rows = allRows
  .filter(([row]) => !ONLY || ONLY.includes(row))
  .map(([row, variants]): [string, Record<string, Call>] => [
    row,
    Object.fromEntries(
      Object.entries(variants).filter(
        ([variant]) => !ONLY_VARIANTS || ONLY_VARIANTS.includes(variant),
      ),
    ),
  ])
  .filter(([, variants]) => Object.keys(variants).length > 0);
const samples = new Map<string, Sample[]>();
try {
  // Round 0 warms the JIT, the connections and Redis's allocator, and is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    for (const [row, variants] of rows) {
      for (const population of POPULATIONS) {
        // Rotated each round, so that no variant always runs right after another.
        const entries = Object.entries(variants);
        const rotated = entries.map((_, i) => entries[(i + round) % entries.length]);
        for (const [variant, call] of rotated) {
          const sample = await measure(call, round === 0 ? REQUESTS / 5 : REQUESTS, population);
          if (round === 0) continue;
          const id = `${row}|${population}|${variant}`;
          samples.set(id, [...(samples.get(id) ?? []), sample]);
          console.error(
            `round ${round} ${row} / ${population} / ${variant}: ${sample.perSecond.toFixed(0)}/s, ` +
              `${sample.redisCpuMicros.toFixed(2)} us Redis CPU`,
          );
        }
      }
    }
  }
} finally {
  await Promise.all(closers.map((close) => close()));
  await redis.stop();
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const medianOf = (id: string, field: keyof Sample) =>
  median(samples.get(id)!.map((sample) => sample[field]));

console.log(
  `\n${REQUESTS} decisions per variant and population (keys present: ${PRESENT_KEYS}), ` +
    `${IN_FLIGHT} in flight, median of ${ROUNDS} rounds; ratios to the row's reference\n`,
);
const columns = [
  'row',
  'keys',
  'variant',
  'decisions/s',
  'vs ref',
  'Node µs',
  'Redis CPU µs',
  'vs ref',
  'EVALSHA µs',
  'vs ref',
];
console.log(`| ${columns.join(' | ')} |\n|${columns.map(() => '---|').join('')}`);
for (const [row, variants] of rows) {
  const reference = referenceOf(row);
  for (const population of POPULATIONS) {
    for (const variant of Object.keys(variants)) {
      const at = (field: keyof Sample, of = variant) =>
        medianOf(`${row}|${population}|${of}`, field);
      // A reference left out (DECIDE_VARIANTS) has no ratio.
      const measured = samples.has(`${row}|${population}|${reference}`);
      const cell = (field: keyof Sample, digits: number) =>
        `${at(field).toFixed(digits)} | ` +
        (measured ? `${(at(field) / at(field, reference)).toFixed(2)}x` : 'n/a');
      const name = variant === reference ? `${variant} (ref)` : variant;
      console.log(
        `| ${row} | ${population} | ${name} | ${cell('perSecond', 0)} | ${at('nodeMicros').toFixed(1)} | ` +
          `${cell('redisCpuMicros', 2)} | ${cell('redisMicros', 2)} |`,
      );
    }
  }
}

if (baseline) {
  /** The median over rounds of the library's figure over the baseline's in the same round. */
  const ratio = (id: string, field: keyof Sample) => {
    const own = samples.get(`${id}|library`)!;
    const base = samples.get(`${id}|library (baseline)`)!;
    return median(own.map((sample, round) => sample[field] / base[round][field]));
  };
  console.log(
    `\nThe library against the baseline (${BASELINE}): medians, and the median of each ` +
      `round's ratio library / baseline\n`,
  );
  const headings = [
    'row',
    'keys',
    'decisions/s: baseline / library',
    'ratio',
    'Redis CPU µs: baseline / library',
    'ratio',
    'EVALSHA µs: baseline / library',
    'ratio',
    'Node µs: baseline / library',
  ];
  console.log(`| ${headings.join(' | ')} |\n|${headings.map(() => '---|').join('')}`);
  // The clients row has no baseline variant: it compares client libraries.
  for (const [row] of rows.filter(([row]) => row !== CLIENTS_ROW)) {
    for (const population of POPULATIONS) {
      const id = `${row}|${population}`;
      const pair = (field: keyof Sample, digits: number) =>
        `${medianOf(`${id}|library (baseline)`, field).toFixed(digits)} / ` +
        `${medianOf(`${id}|library`, field).toFixed(digits)}`;
      const cells = (field: keyof Sample, digits: number) =>
        `${pair(field, digits)} | ${ratio(id, field).toFixed(3)}x`;
      console.log(
        `| ${row} | ${population} | ${cells('perSecond', 0)} | ${cells('redisCpuMicros', 2)} | ` +
          `${cells('redisMicros', 2)} | ${pair('nodeMicros', 1)} |`,
      );
    }
  }
}
