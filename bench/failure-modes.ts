/**
 * `npm run bench:failure`: what each failureMode does when Redis fails under load. For
 * 'open', 'closed' and 'local' in turn: 3 pods on the module's default failure options
 * (100 ms, breaker on), one client's requests spread over them while Redis is killed, and
 * while it is frozen (SIGSTOP) for 3 s; then how long after Redis accepts commands again (as
 * an independent client in a process of its own sees it: acceptance-watch.ts) every pod has
 * decided on it. Prints a Markdown table, the 200s Redis decided apart from those the failure
 * mode let through (open) or decided in the pod ('local'): a pod stamps each response its
 * Redis store decided in time (test/support/pods/decision-timing.ts). Latencies as the load saw
 * them (mostly queueing behind the requests in flight) and in the pods, from reading a request
 * to answering it (request-log.ts), raw and less what of it the machine left the pod
 * unscheduled. Options: --requests, --concurrency.
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { startRedisServer } from '../test/support/redis-server.js';
import { type PodConfig, WEEK_MS } from '../test/support/pods/pod-config.js';
import { type LoadReport, type PodFleet, startPodFleet } from '../test/support/pods/pod-fleet.js';
import { type AcceptanceWatch, watchAcceptance } from '../test/support/pods/acceptance-watch.js';
import { unscheduledWithin } from '../test/support/pods/request-log.js';

const { values: options } = parseArgs({
  options: {
    requests: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '60' },
  },
});
const requests = Number(options.requests);
const concurrency = Number(options.concurrency);
const PODS = 3;
const LIMIT = 30;
const STALL_MS = 3_000;
const MODES = ['open', 'closed', 'local'] as const;

interface Row {
  readonly mode: string;
  readonly fault: string;
  readonly report: LoadReport;
  /** From each pod's reading the request to its answer, in ms, sorted. */
  readonly inPods: readonly number[];
  /** The same less what of it the machine left the pod unscheduled, sorted. */
  readonly scheduledInPods: readonly number[];
  readonly backAfterMs: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/**
 * When Redis accepted commands again after `since` (epoch ms), as the watch saw it; then polls
 * with fresh clients, one request per pod, until every pod's answer was decided by Redis.
 * Resolves with the ms from the one to the other.
 */
async function untilDecidedByRedis(
  fleet: PodFleet,
  watch: AcceptanceWatch,
  since: number,
): Promise<number> {
  const accepting = () => watch.changes.find((change) => change.accepting && change.at > since);
  while (!accepting()) await new Promise((resolve) => setTimeout(resolve, 1));
  for (let probe = 0; ; probe++) {
    const { responses } = await fleet.fire({
      route: 'limited',
      clientKey: `probe-${probe}`,
      requests: PODS,
      concurrency: PODS,
    });
    if (responses.every((response) => response.decisionEndedAt !== undefined)) {
      return Math.max(...responses.map((response) => response.decisionEndedAt!)) - accepting()!.at;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

async function measure(mode: (typeof MODES)[number]): Promise<Row[]> {
  const redis = await startRedisServer();
  const config: PodConfig = {
    variant: 'library',
    redisUrl: redis.url,
    prefix: `failure-${mode}`,
    failureMode: mode,
    decisionTimeoutMs: 100,
    ...(mode === 'local' ? { instances: PODS } : {}),
    requestLog: true,
    routes: { limited: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WEEK_MS } },
  };
  const fleet = await startPodFleet({ pods: PODS, config });
  const watch = await watchAcceptance(redis.port);
  const load = async (clientKey: string) => {
    await fleet.requestLogs();
    const report = await fleet.fire({ route: 'limited', clientKey, requests, concurrency });
    const answers = (await fleet.requestLogs()).flatMap(({ records, stalls }) =>
      records
        .filter((record) => record.client === clientKey)
        .map(({ receivedAt, answeredAt }) => ({
          ms: answeredAt - receivedAt,
          unscheduledMs: unscheduledWithin(stalls, receivedAt, answeredAt),
        })),
    );
    const sorted = (ms: number[]) => ms.sort((a, b) => a - b);
    return {
      report,
      inPods: sorted(answers.map(({ ms }) => ms)),
      scheduledInPods: sorted(answers.map(({ ms, unscheduledMs }) => ms - unscheduledMs)),
    };
  };
  try {
    await load('warm-up');
    const rows: Row[] = [];

    const killedAt = Date.now();
    await redis.kill();
    const killed = await load('during-kill');
    await redis.restart();
    rows.push({
      mode,
      fault: 'killed',
      ...killed,
      backAfterMs: await untilDecidedByRedis(fleet, watch, killedAt),
    });

    const pausedAt = Date.now();
    await redis.pause(STALL_MS);
    const paused = await load('during-pause');
    rows.push({
      mode,
      fault: `SIGSTOP ${STALL_MS / 1000} s`,
      ...paused,
      backAfterMs: await untilDecidedByRedis(fleet, watch, pausedAt + STALL_MS / 2),
    });
    return rows;
  } finally {
    watch.stop();
    await fleet.stop();
    await redis.stop();
  }
}

function formatTable(rows: readonly Row[]): string {
  const header =
    '| failureMode | Redis | 200 decided by Redis | 200 by the failure mode | 429 | 503 | other | 200 per pod (most) | p50 ms | p99 ms | max ms | in the pods p99 / max ms | less unscheduled | deciding on Redis again after |';
  const lines = rows.map(({ mode, fault, report, inPods, scheduledInPods, backAfterMs }) => {
    const { statuses, responses, admitted, failedOpen } = report;
    const latencies = responses.map((response) => response.latencyMs).sort((a, b) => a - b);
    const other = responses.filter((r) => ![200, 429, 503].includes(r.status)).length;
    const perPod = Array.from(
      { length: PODS },
      (_, pod) => responses.filter((r) => r.pod === pod && r.status === 200).length,
    );
    return `| ${mode} | ${fault} | ${admitted} | ${failedOpen} | ${statuses[429] ?? 0} | ${statuses[503] ?? 0} | ${other} | ${Math.max(...perPod)} | ${percentile(latencies, 50).toFixed(1)} | ${percentile(latencies, 99).toFixed(1)} | ${latencies.at(-1)!.toFixed(1)} | ${percentile(inPods, 99)} / ${inPods.at(-1)} | ${percentile(scheduledInPods, 99).toFixed(0)} / ${scheduledInPods.at(-1)!.toFixed(0)} | ${backAfterMs.toFixed(0)} ms |`;
  });
  return [header, '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

const rows: Row[] = [];
const loadBefore = loadavg()[0];
for (const mode of MODES) rows.push(...(await measure(mode)));
console.log(
  `${PODS} pods, one client, limit ${LIMIT} (fixed window of a week); ${requests} requests, ` +
    `${concurrency} in flight, while Redis is killed (then restarted) and while it is frozen ` +
    `${STALL_MS / 1000} s; timeout 100 ms, breaker on (opens after 3 silent decisions, closes on its background probe's first answer); ` +
    `'local' with instances ${PODS}. Load average ${loadBefore.toFixed(1)} before, ${loadavg()[0].toFixed(1)} after.\n`,
);
console.log(formatTable(rows));
