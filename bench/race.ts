/**
 * `npm run bench:race`: one client's requests spread over N pods on one Redis, many in
 * flight, through two baselines and the library, each through the same harness:
 * - per-pod in-memory: the module without Redis (its embedded store), one budget per pod;
 * - naive GET-then-INCR: a fixed window checked and incremented in separate round trips;
 * - the library: one atomic Lua script per decision.
 * Prints a Markdown table: how many requests each admitted against what one shared limit
 * allows. Options: --pods, --limit, --requests, --concurrency (the overload rows keep
 * their own limit and load), --only <text> (the variants whose label contains it).
 */
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import type { Algorithm } from '../lib/index.js';
import { startRedisServer } from '../test/support/redis-server.js';
import { leakyBucketAdmissionBounds } from '../test/support/pods/leaky-bucket-bounds.js';
import {
  EXACT_ALGORITHMS,
  type PodConfig,
  type PodRoutePolicy,
  type PodVariant,
  routePerAlgorithm,
  WEEK_MS,
} from '../test/support/pods/pod-config.js';
import { type LoadReport, startPodFleet } from '../test/support/pods/pod-fleet.js';

const { values: options } = parseArgs({
  options: {
    pods: { type: 'string', default: '6' },
    limit: { type: 'string', default: '50' },
    requests: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '120' },
    only: { type: 'string', default: '' },
  },
});
const pods = Number(options.pods);
const limit = Number(options.limit);
const requests = Number(options.requests);
const concurrency = Number(options.concurrency);
/** One request drains per 100 ms: long beside a decision, so the drain bounds stay tight. */
const leakyBucket: PodRoutePolicy = {
  algorithm: 'leaky-bucket',
  limit: 20,
  windowMs: 2_000,
  burst: 20,
};
/** Runs per route before the measured one, each with its own client. */
const WARM_UP_ROUNDS = 3;
const ALL_ALGORITHMS: readonly Algorithm[] = [...EXACT_ALGORITHMS, 'leaky-bucket'];

interface Variant {
  readonly variant: PodVariant;
  readonly label: string;
  readonly algorithms: readonly Algorithm[];
  /** Module failure settings, when not the pods' own (closed after 10 s). */
  readonly failure?: Pick<PodConfig, 'failureMode' | 'decisionTimeoutMs'>;
  /** Limit and load, when not the command line's. */
  readonly load?: {
    readonly limit: number;
    readonly requests: number;
    readonly concurrency: number;
  };
  readonly blockEventLoop?: PodConfig['blockEventLoop'];
}

/** The module's own failure defaults: fail open, 100 ms. */
const DEFAULT_FAILURE: Variant['failure'] = { failureMode: 'open', decisionTimeoutMs: 100 };
/** Overload: far more in flight than two cores serve within 100 ms. */
const OVERLOAD = { limit: 100, requests: 3_000, concurrency: 500 };

const VARIANTS: readonly Variant[] = [
  { variant: 'in-memory', label: 'per-pod in-memory', algorithms: ALL_ALGORITHMS },
  { variant: 'naive-redis', label: 'naive GET-then-INCR', algorithms: ['fixed-window'] },
  { variant: 'library', label: 'nestjs-redis-rate-limiter', algorithms: ALL_ALGORITHMS },
  {
    // An overloaded pod on the module's defaults: decisions come back after 100 ms, mostly
    // waiting in the pod's own busy event loop; being late is not being failed.
    variant: 'library',
    label: 'nestjs-redis-rate-limiter, defaults (fail open, 100 ms)',
    algorithms: ['fixed-window'],
    failure: DEFAULT_FAILURE,
  },
  {
    variant: 'library',
    label: 'nestjs-redis-rate-limiter, defaults, 3,000 requests / 500 in flight',
    algorithms: ['sliding-window-counter'],
    failure: DEFAULT_FAILURE,
    load: OVERLOAD,
  },
  {
    variant: 'library',
    label:
      'nestjs-redis-rate-limiter, defaults, 3,000 requests / 500 in flight, every event loop blocked 300 ms each second',
    algorithms: ['sliding-window-counter'],
    failure: DEFAULT_FAILURE,
    load: OVERLOAD,
    blockEventLoop: { everyMs: 1_000, forMs: 300 },
  },
];

interface Row {
  readonly label: string;
  readonly algorithm: Algorithm;
  readonly limit: number;
  /** Admitted on a decision of the shared store. */
  readonly admitted: number;
  /** Admitted by the failure mode, the store having failed or missed the deadline. */
  readonly failedOpen: number;
  /**
   * The most one limit shared by all pods admits: `limit`, or for the leaky bucket its
   * queue plus what drained during the run, bounded from the decision stamps (the lower
   * bound only holds for one shared bucket, so it would say nothing about the baselines).
   */
  readonly atMost: number;
  readonly p50: number;
  readonly p99: number;
  readonly failures: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function toRow(label: string, algorithm: Algorithm, limit: number, report: LoadReport): Row {
  const latencies = report.responses.map((response) => response.latencyMs).sort((a, b) => a - b);
  const atMost =
    algorithm === 'leaky-bucket'
      ? leakyBucketAdmissionBounds(
          report.responses,
          leakyBucket.burst!,
          leakyBucket.windowMs / leakyBucket.limit,
        ).max
      : limit;
  return {
    label,
    algorithm,
    limit,
    admitted: report.admitted,
    failedOpen: report.failedOpen,
    atMost,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    failures: report.responses.length - (report.statuses[200] ?? 0) - (report.statuses[429] ?? 0),
  };
}

function formatTable(rows: readonly Row[]): string {
  const header =
    '| variant | algorithm | pods | limit | admitted on a decision | one shared limit admits at most | leak ratio | admitted failing open | p50 ms | p99 ms |';
  const lines = rows.map((row) => {
    const limitShown =
      row.algorithm === 'leaky-bucket' ? `queue ${leakyBucket.burst} + drain` : String(row.limit);
    const admitted = row.admitted + (row.failures > 0 ? ` (${row.failures} errors)` : '');
    const ratio = (row.admitted / row.atMost).toFixed(2);
    return `| ${row.label} | ${row.algorithm} | ${pods} | ${limitShown} | ${admitted} | ${row.atMost} | ${ratio} | ${row.failedOpen} | ${row.p50.toFixed(1)} | ${row.p99.toFixed(1)} |`;
  });
  return [header, '|---|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

async function runVariant(
  redisUrl: string,
  { variant, label, algorithms, failure, load, blockEventLoop }: Variant,
  prefix: string,
): Promise<Row[]> {
  const {
    limit: budget,
    requests: count,
    concurrency: inFlight,
  } = load ?? {
    limit,
    requests,
    concurrency,
  };
  const routes = {
    ...routePerAlgorithm(
      algorithms.filter((algorithm) => algorithm !== 'leaky-bucket'),
      { limit: budget, windowMs: WEEK_MS },
    ),
    ...(algorithms.includes('leaky-bucket') ? { 'leaky-bucket': leakyBucket } : {}),
  };
  const config: PodConfig = { variant, redisUrl, prefix, routes, ...failure, blockEventLoop };
  const fleet = await startPodFleet({ pods, config });
  try {
    const run = (algorithm: Algorithm, client: string) =>
      fleet.fire({ route: algorithm, clientKey: client, requests: count, concurrency: inFlight });
    // Warm every route of every pod (JIT, connections) before measuring any: measured
    // right after one warm-up, the first routes of a fleet ran up to 3× slower.
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      for (const algorithm of algorithms) await run(algorithm, `warm-up-${round}`);
    }
    const rows: Row[] = [];
    for (const algorithm of algorithms) {
      rows.push(toRow(label, algorithm, budget, await run(algorithm, 'measured')));
    }
    return rows;
  } finally {
    await fleet.stop();
  }
}

const redis = await startRedisServer();
try {
  const admin = new Redis(redis.url);
  const redisVersion = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1];
  admin.disconnect();
  const rows: Row[] = [];
  for (const [index, variant] of VARIANTS.entries()) {
    if (!variant.label.includes(options.only)) continue;
    rows.push(...(await runVariant(redis.url, variant, `race-${index}`)));
  }
  console.log(
    `${pods} pods (separate Node ${process.version} processes), one Redis ${redisVersion}, ` +
      `${availableParallelism()} CPUs; per run ${requests} requests of one client, ` +
      `${concurrency} in flight (unless the row says otherwise), round-robin over the pods. Leaky bucket: queue ` +
      `${leakyBucket.burst}, one request drains per ${leakyBucket.windowMs / leakyBucket.limit} ms; ` +
      `what one shared bucket admits is bounded from the run's decision times, and its ` +
      `latencies include the queue wait.\n`,
  );
  console.log(formatTable(rows));
} finally {
  await redis.stop();
}
