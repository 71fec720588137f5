/**
 * Hot-path cost, over HTTP on Express and on Fastify: requests/s of the same app
 * (test/support/hot-path-app.ts says what each variant is) in these variants:
 * - `none`: no limiter, the baseline;
 * - `bare`: a bare one-script guard of the library's semantics (same algorithm, key, headers,
 *   429), the floor for any Redis-backed guard doing the library's job;
 * - `flexible`: rate-limiter-flexible's RateLimiterRedis behind a bare guard (no headers, no
 *   deadline, a plain 429): the peer a user would otherwise pick;
 * - `redis`: the library on Redis, default options (IETF headers);
 * - `quiet`: as `redis` with `headers: 'none'`: as little output as `flexible`, and beside
 *   `redis`, what the headers cost;
 * - `memory`: the library on the embedded store;
 * - `metrics`: as `redis` with the `metrics` option on (Prometheus exporter);
 * - `base`: only with HOT_PATH_BASELINE_APP=<another build's built hot-path app, e.g.
 *   /tmp/base/dist/bench/hot-path-app.js of an older commit>: that app's `redis` variant,
 *   interleaved with the rest (the older app may ignore HOT_PATH_ALGORITHM), and a table of
 *   `redis` against it;
 * in two scenarios:
 * - `distinct`: every request from a new client key (an `x-client` header the app keys
 *   by, for every variant alike), all admitted: the whole decision on every request;
 * - `hot`: one client over its limit, every request denied (429; the no-limiter app
 *   answers 200): what a client hammering a spent limit costs.
 * Every limiting variant but `flexible` uses HOT_PATH_ALGORITHM (fixed-window unless set):
 * RateLimiterRedis is a fixed window (one counter per key, expiring a window after its first
 * request), so the ratios to `flexible` compare like with like only on fixed-window; with
 * HOT_PATH_ALGORITHM=sliding-window-counter (the library's default algorithm) the ratios to
 * `bare` still do, and the table titles say which algorithm ran.
 * Variants are interleaved round by round, in an order rotated each round, each from a
 * fresh app process per scenario; each round's ratios are taken against that round's own
 * runs and the median round is reported, since this 2-core machine (load generator, app
 * and Redis on it together) is noisy. Beside requests/s, the app's CPU per request: where
 * the app gets only part of a core (the load generator and other processes take the rest),
 * requests/s follows its share of the machine, CPU per request what it does per request.
 * Each app has a full GC while idle before it is measured (hot-path-app.ts says why): without
 * it, whether an app process ran in V8's faster or slower state for `process.nextTick` followed
 * what its startup allocated, and a variant's median followed how many of each it drew.
 * "Admitted failing open" counts 200s without a RateLimit header, so only for the variants
 * that send one (`redis`, `memory`, `metrics`).
 * Targets: distinct, library on Redis at least 0.95x the bare guard and at least 1.0x
 * `flexible` (fixed window, default headers); hot, well ahead of the bare guard (both 429s
 * travel Nest's exception path).
 *
 *   npm run bench:hot-path
 *   HOT_PATH_SECONDS (4), HOT_PATH_ROUNDS (5), HOT_PATH_CONNECTIONS (32),
 *   HOT_PATH_ADAPTERS (express,fastify),
 *   HOT_PATH_VARIANTS (none,bare,flexible,redis,quiet,memory,metrics),
 *   HOT_PATH_SCENARIOS (distinct,hot), HOT_PATH_ALGORITHM (fixed-window, or
 *   sliding-window-counter), HOT_PATH_BASELINE_APP to tune; ratios need the `none`, `bare` and `flexible` variants
 */
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { sendRawCommand, startRedisServer } from '../test/support/redis-server.js';
import { type HotPathAppProcess, startHotPathApp } from '../test/support/hot-path-app-process.js';

const SECONDS = Number(process.env.HOT_PATH_SECONDS ?? 4);
const ROUNDS = Number(process.env.HOT_PATH_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.HOT_PATH_CONNECTIONS ?? 32);
const ADAPTERS = (process.env.HOT_PATH_ADAPTERS ?? 'express,fastify').split(',');
const BASELINE_APP = process.env.HOT_PATH_BASELINE_APP;
const ALL_VARIANTS = [
  'none',
  'bare',
  'flexible',
  'redis',
  'quiet',
  'memory',
  'metrics',
  ...(BASELINE_APP ? (['base'] as const) : []),
] as const;
const ALL_SCENARIOS = ['distinct', 'hot'] as const;
type Variant = (typeof ALL_VARIANTS)[number];
type Scenario = (typeof ALL_SCENARIOS)[number];
/** A comma-separated subset of `all` from the environment, in `all`'s order; all if unset. */
function chosen<T extends string>(name: string, all: readonly T[]): readonly T[] {
  const asked = process.env[name]?.split(',');
  if (!asked) return all;
  const unknown = asked.filter((value) => !all.includes(value as T));
  if (unknown.length > 0) throw new Error(`${name}: unknown ${unknown.join(', ')}`);
  return all.filter((value) => asked.includes(value));
}
const VARIANTS = chosen('HOT_PATH_VARIANTS', ALL_VARIANTS);
const SCENARIOS = chosen('HOT_PATH_SCENARIOS', ALL_SCENARIOS);
/** Read by the app processes too (they inherit the environment); hot-path-app.ts checks it. */
const ALGORITHM = process.env.HOT_PATH_ALGORITHM ?? 'fixed-window';

const APP = new URL('../test/support/hot-path-app.js', import.meta.url);

let clients = 0;
const run = `${process.pid}-${Date.now()}`;

/** The scenario's request: a new client key each time, or the one hot client. */
const requestOf = (scenario: Scenario, onResponse?: autocannon.Request['onResponse']) =>
  (scenario === 'distinct'
    ? {
        method: 'GET',
        path: '/ping',
        setupRequest: (request: autocannon.Request) => ({
          ...request,
          headers: { ...request.headers, 'x-client': `${run}-${++clients}` },
        }),
        onResponse,
      }
    : {
        method: 'GET',
        path: '/hot',
        headers: { 'x-client': `hot-${run}` },
        onResponse,
      }) satisfies autocannon.Request;

/**
 * Requests/s for `seconds` with CONNECTIONS keep-alive connections, and how many responses
 * came without a RateLimit header: admitted by failing open, with no decision behind them.
 * Fails the run on any error or any status other than the scenario's (200, or 429 for a
 * limited hot client, but for the one request a new window admits).
 */
async function load(port: number, scenario: Scenario, denied: boolean, seconds: number) {
  let undecided = 0;
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    // Every variant pays for this callback alike, so the ratios stay comparable.
    requests: [
      requestOf(scenario, (_status, _body, _context, headers = {}) => {
        if (!Object.keys(headers).some((name) => name.toLowerCase() === 'ratelimit')) undecided++;
      }),
    ],
  });
  // The hot client's windows are epoch-aligned hours: one that starts within the run admits
  // its one request.
  const expected = denied ? result['4xx'] + Math.min(result['2xx'], 1) : result['2xx'];
  if (result.errors > 0 || result.timeouts > 0 || expected !== result.requests.total) {
    throw new Error(
      `${scenario}: ${result['2xx']} 2xx, ${result['4xx']} 4xx, ${result.non2xx} non-2xx, ` +
        `${result.errors} errors of ${result.requests.total}`,
    );
  }
  return { rate: result.requests.average, failedOpen: undecided, total: result.requests.total };
}

async function redisCpuUs(port: number): Promise<number> {
  const info = await sendRawCommand(port, ['INFO', 'cpu']);
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)![1]);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1e6;
}

/** A second of the same load first: JIT, connections, script load; spends the hot limit. */
const warmUp = (port: number, scenario: Scenario) =>
  autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: 1,
    requests: [requestOf(scenario)],
  });

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const redis = await startRedisServer();
const rates = new Map<string, number[]>();
const LIMITED: ReadonlySet<Variant> = new Set(['redis', 'memory', 'metrics', 'base']);
const failedOpen = new Map<string, number>();
const series = (adapter: string, scenario: Scenario, variant: Variant, measure = 'rate') => {
  const name = `${adapter}/${scenario}/${variant}/${measure}`;
  if (!rates.has(name)) rates.set(name, []);
  return rates.get(name)!;
};
/** One scenario's measured run on a started app, after its warm-up. */
async function measure(
  app: HotPathAppProcess,
  adapter: string,
  variant: Variant,
  scenario: Scenario,
  round: number,
) {
  const denied = scenario === 'hot' && variant !== 'none';
  await warmUp(app.port, scenario);
  const [appBefore, redisBefore] = [app.cpuUs(), await redisCpuUs(redis.port)];
  const generatorBefore = process.cpuUsage();
  const { rate, failedOpen: undecided, total } = await load(app.port, scenario, denied, SECONDS);
  const generator = process.cpuUsage(generatorBefore);
  const [appAfter, redisAfter] = [app.cpuUs(), await redisCpuUs(redis.port)];
  const appUs = (appAfter - appBefore) / total;
  series(adapter, scenario, variant).push(rate);
  series(adapter, scenario, variant, 'app').push(appUs);
  series(adapter, scenario, variant, 'redis').push((redisAfter - redisBefore) / total);
  const name = `${adapter}/${scenario}/${variant}`;
  failedOpen.set(name, (failedOpen.get(name) ?? 0) + undecided);
  console.log(
    `round ${round} ${adapter.padEnd(7)} ${scenario.padEnd(8)} ${variant.padEnd(7)} ` +
      `${rate.toFixed(0)} req/s; CPU µs per request: app ${appUs.toFixed(1)} ` +
      `(${((rate * appUs) / 1e6).toFixed(2)} of a core), ` +
      `load generator ${((generator.user + generator.system) / total).toFixed(1)}` +
      (LIMITED.has(variant) ? `; ${undecided} admitted failing open` : ''),
  );
}

try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const adapter of ADAPTERS) {
      // Rotated each round, so that no variant always runs first or last (after the others
      // have warmed, heated or loaded the machine).
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]);
      for (const variant of order) {
        // A fresh app per scenario: what a scenario measures does not depend on the one
        // run before it in the same process.
        for (const scenario of SCENARIOS) {
          const app =
            variant === 'base'
              ? await startHotPathApp(pathToFileURL(BASELINE_APP!), adapter, 'redis', redis.url)
              : await startHotPathApp(APP, adapter, variant, redis.url);
          try {
            await measure(app, adapter, variant, scenario, round);
          } finally {
            await app.stop();
          }
        }
      }
    }
  }
} finally {
  await redis.stop();
}

const names: Record<Variant, string> = {
  none: 'no limiter',
  bare: 'bare guard: the minimal script of the same algorithm, same key, headers and 429',
  flexible: "bare guard on rate-limiter-flexible's RateLimiterRedis (no headers, plain 429)",
  redis: 'this library on Redis (IETF headers)',
  quiet: "this library on Redis with headers: 'none'",
  memory: 'this library on the embedded store',
  metrics: 'this library on Redis with metrics on (Prometheus exporter)',
  base: `the baseline build on Redis (IETF headers): ${BASELINE_APP}`,
};
for (const adapter of ADAPTERS) {
  for (const scenario of SCENARIOS) {
    const none = series(adapter, scenario, 'none');
    const bare = series(adapter, scenario, 'bare');
    const flexible = series(adapter, scenario, 'flexible');
    console.log(
      `\n${adapter}, ${scenario === 'distinct' ? 'distinct keys (all 200)' : 'one hot key (all 429 but no limiter)'}, ${ALGORITHM}\n` +
        '| variant | median req/s | median ratio to no limiter | median ratio to bare guard | median ratio to flexible | CPU µs per request: app / Redis (medians) | app CPU per request, median ratio no limiter / variant | admitted failing open, all rounds |\n|---|---|---|---|---|---|---|---|',
    );
    for (const variant of VARIANTS) {
      const own = series(adapter, scenario, variant);
      const ratio = (base: number[]) =>
        base.length === 0
          ? 'n/a'
          : `${median(own.map((rate, round) => rate / base[round])).toFixed(2)}x`;
      const cpu = (side: string) => median(series(adapter, scenario, variant, side)).toFixed(1);
      const noneApp = series(adapter, scenario, 'none', 'app');
      const appRatio =
        noneApp.length === 0
          ? 'n/a'
          : `${median(series(adapter, scenario, variant, 'app').map((us, round) => noneApp[round] / us)).toFixed(2)}x`;
      const undecided = LIMITED.has(variant)
        ? String(failedOpen.get(`${adapter}/${scenario}/${variant}`))
        : 'n/a';
      console.log(
        `| ${names[variant]} | ${median(own).toFixed(0)} | ${ratio(none)} | ${ratio(bare)} | ${ratio(flexible)} | ${cpu('app')} / ${cpu('redis')} | ${appRatio} | ${undecided} |`,
      );
    }
  }
}

if (VARIANTS.includes('base') && VARIANTS.includes('redis')) {
  console.log(
    `\nthis library on Redis against the baseline build (${BASELINE_APP}), ${ALGORITHM}: ` +
      "medians, and the median of each round's ratio redis / base\n" +
      '| adapter | scenario | req/s: base / redis | ratio | app CPU µs per request: base / redis | ratio |\n|---|---|---|---|---|---|',
  );
  for (const adapter of ADAPTERS) {
    for (const scenario of SCENARIOS) {
      const cells = (measure: string, digits: number) => {
        const own = series(adapter, scenario, 'redis', measure);
        const base = series(adapter, scenario, 'base', measure);
        const ratio = median(own.map((value, round) => value / base[round]));
        return `${median(base).toFixed(digits)} / ${median(own).toFixed(digits)} | ${ratio.toFixed(3)}x`;
      };
      console.log(`| ${adapter} | ${scenario} | ${cells('rate', 0)} | ${cells('app', 1)} |`);
    }
  }
}
