/**
 * Leased quotas on one hot key (docs/leases.md), exact mode against `lease: LEASES_SIZE`
 * (50) in one interleaved run (order rotated each round; the median round reported), in two
 * parts, each on a fresh Redis of its own and one client key whose budget no run spends:
 * - decisions: LEASES_PODS (6) pods in this process, each a RateLimiter with its own
 *   connection (its own lease holder; to Redis, six pods), calling consume() on the key,
 *   LEASES_IN_FLIGHT (32) at a time each, for LEASES_SECONDS: decisions/s, store calls per
 *   admitted decision (EVAL + EVALSHA, INFO commandstats), the scripts' own time per admitted
 *   decision (commandstats usec) and Redis main-thread CPU per admitted decision (INFO cpu,
 *   used_cpu_*_main_thread, less what the main thread spent per second in an idle spell of
 *   the same pods just before: its timers, the connected clients, the INFO calls);
 * - HTTP: LEASES_HTTP_APPS (1) processes of the hot-path app (test/support/hot-path-app.ts,
 *   Express, `/ping`), LEASES_CONNECTIONS (32) spread over them, beside the same app without
 *   a limiter (`none`), as bench:hot-path measures a hot key: requests/s, and its ratio to
 *   `none` in the same round (six Node processes and the load on two cores measure mostly
 *   the scheduler).
 * Load, apps and Redis share this 2-core machine: rates follow each process's share of it,
 * so the ratios compare like with like, and per-decision CPU is what holds across machines.
 * Targets at lease 50: store calls per admitted decision at most 0.05, Redis main-thread
 * CPU per admitted decision at most 0.5 us, HTTP requests/s at least 0.90x the no-limiter
 * app.
 *
 *   npm run bench:leases
 *   LEASES_SECONDS (4), LEASES_ROUNDS (5), LEASES_PODS (6), LEASES_IN_FLIGHT (32),
 *   LEASES_HTTP_APPS (1), LEASES_CONNECTIONS (32), LEASES_SIZE (50),
 *   LEASES_PARTS (decisions,http) to tune
 */
import { once } from 'node:events';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { type RateLimitPolicy, RateLimiter, RedisStore } from '../lib/index.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import {
  type RedisServer,
  sendRawCommand,
  startRedisServer,
} from '../test/support/redis-server.js';
import { type HotPathAppProcess, startHotPathApp } from '../test/support/hot-path-app-process.js';

const SECONDS = Number(process.env.LEASES_SECONDS ?? 4);
const ROUNDS = Number(process.env.LEASES_ROUNDS ?? 5);
const PODS = Number(process.env.LEASES_PODS ?? 6);
const IN_FLIGHT = Number(process.env.LEASES_IN_FLIGHT ?? 32);
const HTTP_APPS = Number(process.env.LEASES_HTTP_APPS ?? 1);
const CONNECTIONS = Number(process.env.LEASES_CONNECTIONS ?? 32);
const LEASE = Number(process.env.LEASES_SIZE ?? 50);
const PARTS = (process.env.LEASES_PARTS ?? 'decisions,http').split(',');
const MODES = ['exact', 'lease'] as const;
type Mode = (typeof MODES)[number];
const APP = new URL('../test/support/hot-path-app.js', import.meta.url);
const CLIENT = `hot-admitted-${process.pid}`;
const IDLE_MS = 1_000;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** In each round, the variants in an order rotated by the round. */
const rotated = <T>(all: readonly T[], round: number) =>
  all.map((_, i) => all[(i + round) % all.length]);

/** What Redis has done so far: script calls, their own time, main-thread CPU (us). */
async function redisCounters(redis: RedisServer) {
  const stats = await sendRawCommand(redis.port, ['INFO', 'commandstats']);
  const stat = (name: string, field: string) =>
    Number(new RegExp(`cmdstat_${name}:.*?${field}=(\\d+)`).exec(stats)?.[1] ?? 0);
  const cpu = await sendRawCommand(redis.port, ['INFO', 'cpu']);
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(cpu)![1]);
  return {
    calls: stat('eval', 'calls') + stat('evalsha', 'calls'),
    scriptUs: stat('eval', 'usec') + stat('evalsha', 'usec'),
    cpuUs: (seconds('used_cpu_user_main_thread') + seconds('used_cpu_sys_main_thread')) * 1e6,
  };
}

interface DecisionFigures {
  readonly rate: number;
  readonly callsPerAdmitted: number;
  readonly scriptUsPerAdmitted: number;
  readonly cpuUsPerAdmitted: number;
}

/** PODS limiters on `redis`, each keeping IN_FLIGHT consumes of the hot key going for `ms`. */
async function decisions(redis: RedisServer, mode: Mode): Promise<DecisionFigures> {
  const policy: RateLimitPolicy = {
    algorithm: 'fixed-window',
    limit: 1_000_000_000,
    window: '1h',
    ...(mode === 'lease' && { lease: LEASE }),
  };
  const pods = await Promise.all(
    Array.from({ length: PODS }, async () => {
      const client = new Redis(redis.url, {
        enableAutoPipelining: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
      });
      await once(client, 'ready');
      const store = new RedisStore(client, true);
      return { store, limiter: new RateLimiter(resolveOptions({ timeout: 10_000 }), store) };
    }),
  );
  const drive = async (ms: number) => {
    let admitted = 0;
    const until = performance.now() + ms;
    await Promise.all(
      pods.flatMap(({ limiter }) =>
        Array.from({ length: IN_FLIGHT }, async () => {
          while (performance.now() < until) {
            if (!(await limiter.consume(CLIENT, policy)).allowed) throw new Error('denied');
            admitted++;
          }
        }),
      ),
    );
    return admitted;
  };
  try {
    await drive(500);
    const idleFrom = await redisCounters(redis);
    await sleep(IDLE_MS);
    const idleTo = await redisCounters(redis);
    const idlePerMs = (idleTo.cpuUs - idleFrom.cpuUs) / IDLE_MS;
    const before = await redisCounters(redis);
    const startedAt = performance.now();
    const admitted = await drive(SECONDS * 1_000);
    const tookMs = performance.now() - startedAt;
    const after = await redisCounters(redis);
    return {
      rate: admitted / (tookMs / 1_000),
      callsPerAdmitted: (after.calls - before.calls) / admitted,
      scriptUsPerAdmitted: (after.scriptUs - before.scriptUs) / admitted,
      cpuUsPerAdmitted: (after.cpuUs - before.cpuUs - idlePerMs * tookMs) / admitted,
    };
  } finally {
    for (const { limiter, store } of pods) {
      await limiter.onApplicationShutdown();
      await store.close();
    }
  }
}

/** Every app at once, CONNECTIONS spread over them, for `seconds`; fails on anything but 200. */
async function load(apps: readonly HotPathAppProcess[], seconds: number): Promise<number> {
  const results = await Promise.all(
    apps.map((app) =>
      autocannon({
        url: app.url,
        connections: Math.ceil(CONNECTIONS / apps.length),
        duration: seconds,
        requests: [{ method: 'GET', path: '/ping', headers: { 'x-client': CLIENT } }],
      }),
    ),
  );
  for (const result of results) {
    if (result.errors > 0 || result.timeouts > 0 || result['2xx'] !== result.requests.total) {
      throw new Error(`${result['2xx']} 2xx of ${result.requests.total}, ${result.errors} errors`);
    }
  }
  return results.reduce((sum, result) => sum + result.requests.total, 0) / seconds;
}

/** Requests/s of HTTP_APPS hot-path apps in `variant`, freshly started. */
async function http(redis: RedisServer, variant: 'none' | Mode): Promise<number> {
  const apps = await Promise.all(
    Array.from({ length: HTTP_APPS }, () =>
      startHotPathApp(APP, 'express', variant === 'none' ? 'none' : 'redis', redis.url, {
        env: variant === 'lease' ? { HOT_PATH_LEASE: String(LEASE) } : {},
      }),
    ),
  );
  try {
    await load(apps, 1);
    return await load(apps, SECONDS);
  } finally {
    await Promise.all(apps.map((app) => app.stop()));
  }
}

const fixed = (value: number, digits: number) => value.toFixed(digits);
const met = (label: string, ok: boolean) => console.log(`- ${label}: ${ok ? 'met' : 'NOT met'}`);

if (PARTS.includes('decisions')) {
  const redis = await startRedisServer();
  const rounds = new Map<Mode, DecisionFigures[]>(MODES.map((mode) => [mode, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of rotated(MODES, round)) {
        const figures = await decisions(redis, mode);
        rounds.get(mode)!.push(figures);
        console.error(`decisions round ${round + 1} ${mode}: ${JSON.stringify(figures)}`);
      }
    }
  } finally {
    await redis.stop();
  }
  const of = (mode: Mode, field: keyof DecisionFigures) =>
    median(rounds.get(mode)!.map((figures) => figures[field]));
  console.log(
    `One hot key, ${PODS} pods in one process (${IN_FLIGHT} consumes in flight each), ` +
      `fixed window, median of ${ROUNDS} interleaved rounds of ${SECONDS} s:\n`,
  );
  console.log(
    '| mode | decisions/s | store calls / admitted | script time / admitted | Redis main-thread CPU / admitted |',
  );
  console.log('|---|---|---|---|---|');
  for (const mode of MODES) {
    console.log(
      `| ${mode === 'lease' ? `lease ${LEASE}` : mode} | ${fixed(of(mode, 'rate'), 0)} | ` +
        `${fixed(of(mode, 'callsPerAdmitted'), 4)} | ${fixed(of(mode, 'scriptUsPerAdmitted'), 3)} us | ` +
        `${fixed(of(mode, 'cpuUsPerAdmitted'), 3)} us |`,
    );
  }
  console.log(`\nTargets at lease ${LEASE}:`);
  met('store calls per admitted decision <= 0.05', of('lease', 'callsPerAdmitted') <= 0.05);
  met(
    'Redis main-thread CPU per admitted decision <= 0.5 us',
    of('lease', 'cpuUsPerAdmitted') <= 0.5,
  );
}

if (PARTS.includes('http')) {
  const variants = ['none', ...MODES] as const;
  const redis = await startRedisServer();
  const rates = new Map<string, number[]>(variants.map((variant) => [variant, []]));
  const ratios = new Map<string, number[]>(variants.map((variant) => [variant, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const ofRound = new Map<string, number>();
      for (const variant of rotated(variants, round)) {
        ofRound.set(variant, await http(redis, variant));
      }
      for (const variant of variants) {
        rates.get(variant)!.push(ofRound.get(variant)!);
        ratios.get(variant)!.push(ofRound.get(variant)! / ofRound.get('none')!);
      }
      console.error(`http round ${round + 1}: ${JSON.stringify(Object.fromEntries(ofRound))}`);
    }
  } finally {
    await redis.stop();
  }
  console.log(
    `\nOne hot admitted key over HTTP, ${HTTP_APPS} app process(es) (Express, ${CONNECTIONS} connections), ` +
      `median of ${ROUNDS} interleaved rounds of ${SECONDS} s:\n`,
  );
  console.log('| variant | req/s | vs no limiter |');
  console.log('|---|---|---|');
  for (const variant of variants) {
    const name =
      variant === 'lease' ? `lease ${LEASE}` : variant === 'none' ? 'no limiter' : variant;
    console.log(
      `| ${name} | ${fixed(median(rates.get(variant)!), 0)} | ${fixed(median(ratios.get(variant)!), 2)}x |`,
    );
  }
  console.log(`\nTarget at lease ${LEASE}:`);
  met('req/s >= 0.90x the no-limiter app', median(ratios.get('lease')!) >= 0.9);
}
