import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AcceptanceWatch, watchAcceptance } from '../support/pods/acceptance-watch.js';
import type { PodConfig } from '../support/pods/pod-config.js';
import { routePath } from '../support/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../support/pods/pod-fleet.js';
import {
  type PodRequestRecord,
  type PodStall,
  unscheduledWithin,
} from '../support/pods/request-log.js';
import { type RedisServer, sendRawCommand, startRedisServer } from '../support/redis-server.js';
import { type LoadSample, percentile, startSteadyLoad } from '../support/steady-load.js';
import { watchTimerLateness } from '../support/timer-lateness.js';

/**
 * Issue #19, items 2 and 3, per failure mode: three pods under steady load while Redis fails
 * in turn (killed, stopped, paused, scripts flushed, out of memory, scripts revoked, a
 * password required). An independent client in a process of its own (acceptance-watch.ts)
 * tells when Redis accepts commands again; each pod logs what it answered, when, and whether
 * Redis decided it (request-log.ts), and when the machine left it unscheduled. Asserted: each
 * pod's first decision on Redis within RECOVERY_MS of Redis accepting commands, none by the
 * failure mode after it, no client over its limit in any window after that, and every
 * answer during a fault within FAULT_ANSWER_MS, p99 and max; each of the pod's time, not
 * counting what the machine kept it from running (the only allowance, measured per pod and
 * span, and printed next to the raw figures).
 */
const PODS = 3;
/** Fixed windows of one second, so that the seconds after each fault hold whole windows. */
const WINDOW_MS = 1_000;
const LIMIT = 20;
const TIMEOUT_MS = 100;
/** Issue #19: a pod's first decision on Redis at most this long after Redis accepts commands. */
const RECOVERY_MS = 100;
/** Issue #19: every answer during a fault within the deadline plus 50 ms, p99 and max. */
const FAULT_ANSWER_MS = TIMEOUT_MS + 50;
/** Each fault lasts this long (SCRIPT FLUSH is instant). */
const FAULT_MS = 1_000;
/** From Redis being back until the next fault: at least one whole window after recovery. */
const SETTLE_MS = 2_500;
const CLIENTS = [
  { key: 'over-1', perSecond: 2 * LIMIT },
  { key: 'over-2', perSecond: 2 * LIMIT },
  { key: 'under-1', perSecond: LIMIT / 2 },
  { key: 'under-2', perSecond: LIMIT / 2 },
];
/**
 * Around each fault's end, a probe request to each pod every PROBE_EVERY_MS on a route of
 * its own (a limit never reached), so that each pod's first decision on Redis is seen to
 * within that, not within the gaps of the clients' load.
 */
const PROBE_EVERY_MS = 10;
const PROBE_LEAD_MS = 50;
const PROBE_TAIL_MS = 250;
const PASSWORD = 'chaos-password';
/** How long before a fault's start the watch's command that met it may have gone out. */
const WATCH_SLACK_MS = 50;

interface FaultPlan {
  readonly name: string;
  /** Starts the fault; `end` (after FAULT_MS) ends it, resolving once it is ended. */
  start(redis: RedisServer): Promise<void>;
  end(redis: RedisServer): Promise<void>;
  /** An instant fault (SCRIPT FLUSH): Redis never stops accepting commands. */
  readonly instant?: true;
}

const config = (redis: RedisServer, setting: string, value: string, password?: string) =>
  sendRawCommand(redis.port, ['CONFIG', 'SET', setting, value], 1_000, password);

const FAULTS: readonly FaultPlan[] = [
  {
    name: 'SIGKILL, then restarted',
    start: (redis) => redis.kill(),
    end: (redis) => redis.restart(),
  },
  {
    name: 'SIGSTOP, then SIGCONT',
    start: (redis) => redis.pause(FAULT_MS),
    end: async () => undefined,
  },
  {
    name: 'CLIENT PAUSE',
    start: async (redis) => {
      await sendRawCommand(redis.port, ['CLIENT', 'PAUSE', String(FAULT_MS), 'ALL']);
    },
    end: async () => undefined,
  },
  {
    name: 'SCRIPT FLUSH',
    start: async () => undefined,
    end: async (redis) => {
      await sendRawCommand(redis.port, ['SCRIPT', 'FLUSH']);
    },
    instant: true,
  },
  {
    name: 'out of memory (maxmemory 1, noeviction)',
    start: async (redis) => {
      await config(redis, 'maxmemory-policy', 'noeviction');
      await config(redis, 'maxmemory', '1');
    },
    end: async (redis) => {
      await config(redis, 'maxmemory', '0');
    },
  },
  {
    name: 'NOPERM (scripts revoked by ACL)',
    start: async (redis) => {
      await sendRawCommand(redis.port, ['ACL', 'SETUSER', 'default', '-eval', '-evalsha']);
    },
    end: async (redis) => {
      await sendRawCommand(redis.port, ['ACL', 'SETUSER', 'default', '+@all']);
    },
  },
  {
    name: 'NOAUTH (a password required, connections dropped)',
    start: async (redis) => {
      await config(redis, 'requirepass', PASSWORD);
      await sendRawCommand(redis.port, ['CLIENT', 'KILL', 'TYPE', 'normal'], 1_000, PASSWORD);
    },
    end: async (redis) => {
      await config(redis, 'requirepass', '', PASSWORD);
    },
  },
];

interface Fault {
  readonly name: string;
  /** Epoch ms: when it was started, and when Redis accepted commands again. */
  readonly start: number;
  readonly back: number;
  /** When the next fault starts (or the run ends): the windows checked end before it. */
  until: number;
  /** The largest event-loop delay of any pod, and of this process, during the fault. */
  readonly podLagMs: number;
  readonly loadLagMs: number;
}

interface Run {
  readonly faults: readonly Fault[];
  /** Per pod, what it answered, and when the machine left it unscheduled. */
  readonly pods: readonly PodRequestRecord[][];
  readonly stalls: readonly PodStall[][];
  /** What the load saw, clients and probes. */
  readonly samples: readonly LoadSample[];
  /** Spans (epoch ms) outside the faults in which Redis accepted no command for TIMEOUT_MS. */
  readonly unplanned: readonly [number, number][];
}

/**
 * When Redis accepted commands again after `start`, as the acceptance watch saw it: its first
 * good reply after its first failure since `start`; for an instant fault, `ended` (Redis never
 * stopped accepting).
 */
function backAfter(watch: AcceptanceWatch, start: number, plan: FaultPlan, ended: number) {
  if (plan.instant) return ended;
  // A failure is stamped when the command that met it went out, which may be just before
  // the fault started; the watch sends one every 2 ms.
  const lost = watch.changes.findIndex(
    (change) => !change.accepting && change.at >= start - WATCH_SLACK_MS,
  );
  const back =
    lost < 0
      ? undefined
      : watch.changes.slice(lost).find((change) => change.accepting && change.at > start);
  if (!back) throw new Error(`${plan.name}: the watch saw no outage, or no end to it`);
  return back.at;
}

/** Steady load on a fleet while every fault strikes in turn. */
async function runChaos(redis: RedisServer, fleet: PodFleet): Promise<Run> {
  const watch = await watchAcceptance(redis.port);
  const url = (route: string) =>
    fleet.ports.map((port) => `http://127.0.0.1:${port}${routePath(route)}`);
  const load = startSteadyLoad(url('chaos'), CLIENTS);
  const probeRate = [{ key: 'probe', perSecond: (PODS * 1_000) / PROBE_EVERY_MS }];
  const probes: Promise<LoadSample[]>[] = [];
  const faults: Fault[] = [];
  try {
    // Warm-up: connections, JIT and the scripts; its windows are checked like any healthy one.
    await sleep(2 * WINDOW_MS);
    for (const plan of FAULTS) {
      await fleet.loopDelays();
      const loadLag = watchTimerLateness();
      const start = Date.now();
      await plan.start(redis);
      await sleep(FAULT_MS - PROBE_LEAD_MS - (Date.now() - start));
      const probe = startSteadyLoad(url('probe'), probeRate);
      await sleep(PROBE_LEAD_MS);
      await plan.end(redis);
      const ended = Date.now();
      await sleep(PROBE_TAIL_MS);
      probes.push(probe.stop());
      for (const previous of faults) previous.until ||= start;
      faults.push({
        name: plan.name,
        start,
        back: backAfter(watch, start, plan, ended),
        until: 0,
        podLagMs: Math.max(...(await fleet.loopDelays())),
        loadLagMs: loadLag(),
      });
      await sleep(SETTLE_MS - (Date.now() - ended));
    }
  } finally {
    watch.stop();
    await load.stop();
    await Promise.all(probes);
  }
  const samples = [...load.samples, ...(await Promise.all(probes)).flat()];
  faults.at(-1)!.until = Date.now();
  const logs = await fleet.requestLogs();
  return {
    faults,
    pods: logs.map((log) => log.records),
    stalls: logs.map((log) => log.stalls),
    samples,
    unplanned: unplanned(watch, faults),
  };
}

/** The watch's spans of TIMEOUT_MS or more without accepting a command, outside the faults. */
function unplanned(watch: AcceptanceWatch, faults: readonly Fault[]): [number, number][] {
  const spans: [number, number][] = [];
  watch.changes.forEach((change, i) => {
    const back = watch.changes[i + 1];
    if (change.accepting || !back || back.at - change.at < TIMEOUT_MS) return;
    if (faults.every((fault) => back.at < fault.start || change.at > fault.back)) {
      spans.push([change.at, back.at]);
    }
  });
  return spans;
}

const onRedis = (record: PodRequestRecord) => record.decisionEndedAt !== undefined;
/** Answered by the failure mode: 503, or admitted without Redis (open or local). */
const byFailureMode = (record: PodRequestRecord) =>
  record.status === 503 || (record.status === 200 && !onRedis(record));
const isChaos = (record: PodRequestRecord) => record.path === routePath('chaos');

/**
 * How long the machine left `pod` unscheduled within [from, to] (epoch ms): what no code in
 * the pod can make up for, and the only thing the bounds below allow beyond the issue's.
 */
const unscheduled = (run: Run, pod: number, from: number, to: number) =>
  unscheduledWithin(run.stalls[pod], from, to);

/**
 * Whether `at` lies near a span in which Redis accepted nothing outside the faults (the
 * machine left it, or the watch, unscheduled past the deadline): the pods rightly answered
 * by the failure mode then, so such requests and windows are left out, and counted.
 */
const disturbed = (run: Run, at: number) =>
  run.unplanned.some(([from, to]) => at >= from - TIMEOUT_MS && at <= to + RECOVERY_MS);

/** Per pod: its first decision on Redis at or after `fault.back` (epoch ms), if any. */
function firstOnRedis(run: Run, fault: Fault): (number | undefined)[] {
  return run.pods.map((records) => {
    const ends = records
      .filter((record) => onRedis(record) && record.decisionEndedAt! >= fault.back)
      .map((record) => record.decisionEndedAt!);
    return ends.length > 0 ? Math.min(...ends) : undefined;
  });
}

/**
 * Per pod: ms from Redis accepting commands to its first decision on it, and of that how
 * long the machine left the pod unscheduled.
 */
const recoveries = (run: Run, fault: Fault) =>
  firstOnRedis(run, fault).map((at, pod) =>
    at === undefined
      ? { ms: Infinity, unscheduledMs: 0 }
      : { ms: at - fault.back, unscheduledMs: unscheduled(run, pod, fault.back, at) },
  );

/**
 * Answers by the failure mode to requests a pod received after its first decision on Redis,
 * given before the next fault started: a pod that went back to Redis stays there.
 */
function failureModeAfterRecovery(run: Run, fault: Fault): string[] {
  const first = firstOnRedis(run, fault);
  return run.pods.flatMap((records, pod) =>
    records
      .filter(
        (record) =>
          byFailureMode(record) &&
          record.receivedAt > (first[pod] ?? fault.back) &&
          record.answeredAt < fault.until &&
          !disturbed(run, record.receivedAt),
      )
      .map((record) => `pod ${pod}: ${record.status} ${record.receivedAt - fault.back} ms after`),
  );
}

/** The instant a request was admitted: its store call's, or (without Redis) its answer's. */
const admittedIn = (record: PodRequestRecord): [number, number] =>
  onRedis(record)
    ? [record.decisionStartedAt!, record.decisionEndedAt!]
    : [record.answeredAt, record.answeredAt];

/**
 * Admissions per (client, fixed window) for the windows that start after every pod decided
 * on Redis again and end before the next fault. A decision counts in the window its store
 * call lies in (one straddling a boundary is left out).
 */
function admissionsAfterRecovery(run: Run, fault: Fault): Map<string, number> {
  const recovered = Math.max(...firstOnRedis(run, fault).map((at) => at ?? Infinity));
  const first = Math.ceil(recovered / WINDOW_MS);
  const last = Math.floor(fault.until / WINDOW_MS) - 1;
  const counts = new Map<string, number>();
  for (let w = first; w <= last; w++) {
    if (disturbed(run, w * WINDOW_MS) || disturbed(run, (w + 1) * WINDOW_MS)) continue;
    if (run.unplanned.some(([from]) => Math.floor(from / WINDOW_MS) === w)) continue;
    for (const { key } of CLIENTS) counts.set(`${key} in window ${w}`, 0);
  }
  for (const record of run.pods.flat()) {
    if (!isChaos(record) || record.status !== 200) continue;
    const [lo, hi] = admittedIn(record);
    const window = Math.floor(lo / WINDOW_MS);
    const key = `${record.client} in window ${window}`;
    if (window === Math.floor(hi / WINDOW_MS) && counts.has(key)) {
      counts.set(key, counts.get(key)! + 1);
    }
  }
  return counts;
}

/**
 * The pods' answers to requests that overlapped a fault (received before Redis was back):
 * how long each took in its pod, and of that how long the machine left the pod unscheduled.
 */
const podAnswersDuring = (run: Run, fault: Fault) =>
  run.pods.flatMap((records, pod) =>
    records
      .filter((record) => record.answeredAt >= fault.start && record.receivedAt < fault.back)
      .map((record) => ({
        ms: record.answeredAt - record.receivedAt,
        unscheduledMs: unscheduled(run, pod, record.receivedAt, record.answeredAt),
      })),
  );

/** The same as the load saw them, from sending to the whole response, in ms. */
const loadAnswersDuring = (run: Run, fault: Fault) =>
  run.samples
    .filter((sample) => sample.doneAt >= fault.start && sample.sentAt < fault.back)
    .map((sample) => sample.doneAt - sample.sentAt);

const tail = (latencies: readonly number[]) =>
  `${percentile(latencies, 99).toFixed(0)}/${Math.max(...latencies).toFixed(0)}`;
/** What is left of a span once the time the machine left the pod unscheduled is taken off. */
const scheduled = ({ ms, unscheduledMs }: { ms: number; unscheduledMs: number }) =>
  ms - unscheduledMs;

function report(mode: string, run: Run): void {
  const lines = run.faults.map((fault) => {
    const answers = podAnswersDuring(run, fault);
    const recovered = recoveries(run, fault)
      .map(({ ms, unscheduledMs }) =>
        unscheduledMs > 0 ? `${ms} (${unscheduledMs.toFixed(0)})` : ms,
      )
      .join(', ');
    return (
      `  ${fault.name}: Redis back ${fault.back - fault.start} ms after the start; ` +
      `pods on Redis ${recovered} ms after that; answers during it p99/max ${tail(answers.map((a) => a.ms))} ms ` +
      `in the pods (${tail(answers.map(scheduled))} ms scheduled), ${tail(loadAnswersDuring(run, fault))} ms at the load; ` +
      `lag: pods ${fault.podLagMs.toFixed(0)} ms, load ${fault.loadLagMs.toFixed(0)} ms`
    );
  });
  const unplanned =
    run.unplanned.length === 0
      ? ''
      : `; Redis accepted nothing outside the faults for ${run.unplanned.map(([from, to]) => to - from).join(', ')} ms (left out)`;
  console.log(
    `chaos, failureMode '${mode}', load average ${loadavg()
      .map((load) => load.toFixed(1))
      .join(' ')}, ` +
      `${run.samples.length} requests${unplanned}; in parentheses, ms the machine left the pod unscheduled:\n${lines.join('\n')}`,
  );
}

/** What every mode promises after each fault: recovery, and exact limits after it. */
function expectRecovery(run: Run): void {
  for (const fault of run.faults) {
    const { name } = fault;
    const late = recoveries(run, fault).filter((recovery) => scheduled(recovery) > RECOVERY_MS);
    expect({ name, late }).toEqual({ name, late: [] });
    expect({ name, byFailureMode: failureModeAfterRecovery(run, fault) }).toEqual({
      name,
      byFailureMode: [],
    });
    const counts = admissionsAfterRecovery(run, fault);
    const over = [...counts].filter(([, admitted]) => admitted > LIMIT);
    expect({ name, over }).toEqual({ name, over: [] });
    // The excess is denied, not refused: clients at twice the limit reach it in every window.
    const short = [...counts].filter(
      ([key, admitted]) => key.startsWith('over') && admitted < LIMIT - 2,
    );
    expect({ name, short }).toEqual({ name, short: [] });
  }
  // As many (client, window) pairs checked as one whole window after each fault holds: a
  // window near an unplanned silence is left out, but the checks must not come out empty.
  expect(
    run.faults.reduce((sum, fault) => sum + admissionsAfterRecovery(run, fault).size, 0),
  ).toBeGreaterThanOrEqual(run.faults.length * CLIENTS.length);
  // Clients at half the limit are never denied in a window clear of faults.
  const denied = run.pods.flat().filter(
    (record) =>
      record.client.startsWith('under') &&
      record.status === 429 &&
      !disturbed(run, record.receivedAt) &&
      run.faults.every((fault) => {
        const window = Math.floor(record.receivedAt / WINDOW_MS) * WINDOW_MS;
        return window + WINDOW_MS <= fault.start || window >= fault.back + RECOVERY_MS;
      }),
  );
  expect(denied.map((record) => record.receivedAt)).toEqual([]);
}

/**
 * Every answer to a request that overlapped a fault came within the deadline plus 50 ms, p99
 * and max, of the time the machine ran its pod.
 */
function expectFaultAnswersInTime(run: Run): void {
  const answers = run.faults.flatMap((fault) => podAnswersDuring(run, fault)).map(scheduled);
  expect(answers.length).toBeGreaterThan(500);
  expect(percentile(answers, 99)).toBeLessThanOrEqual(FAULT_ANSWER_MS);
  expect(Math.max(...answers)).toBeLessThanOrEqual(FAULT_ANSWER_MS);
}

const statusesOf = (run: Run) =>
  [...new Set(run.pods.flat().map((record) => record.status))].sort();

const MODES = {
  open(run: Run) {
    expect(statusesOf(run)).toEqual([200, 429]);
  },
  /** 503 with Retry-After, and only for requests received during a fault. */
  closed(run: Run) {
    expect(statusesOf(run)).toEqual([200, 429, 503]);
    const unavailable = run.samples.filter((sample) => sample.status === 503);
    expect(unavailable.filter((sample) => !(Number(sample.retryAfter) >= 1))).toEqual([]);
  },
  /** As open, and what a pod admits on its own stays within its share of the limit. */
  local(run: Run) {
    MODES.open(run);
    const share = Math.floor(LIMIT / PODS);
    const local = new Map<string, number>();
    run.pods.forEach((records, pod) => {
      for (const record of records) {
        if (!isChaos(record) || !byFailureMode(record)) continue;
        // Decided at some instant between received and answered: one that spans a window's
        // edge may have been counted in either window, so only those within one are held to it.
        const window = Math.floor(record.receivedAt / WINDOW_MS);
        if (Math.floor(record.answeredAt / WINDOW_MS) !== window) continue;
        const key = `${record.client} on pod ${pod} in window ${window}`;
        local.set(key, (local.get(key) ?? 0) + 1);
      }
    });
    expect(local.size).toBeGreaterThan(0);
    expect([...local].filter(([, admitted]) => admitted > share)).toEqual([]);
  },
} as const;

describe.each(Object.keys(MODES) as (keyof typeof MODES)[])(
  'chaos: three pods, failureMode %s, while Redis fails in turn',
  (failureMode) => {
    let redis: RedisServer;
    let fleet: PodFleet;
    beforeAll(async () => {
      redis = await startRedisServer();
      const config: PodConfig = {
        variant: 'library',
        redisUrl: redis.url,
        prefix: `chaos-${failureMode}`,
        failureMode,
        decisionTimeoutMs: TIMEOUT_MS,
        ...(failureMode === 'local' && { instances: PODS }),
        requestLog: true,
        routes: {
          chaos: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WINDOW_MS },
          probe: { algorithm: 'fixed-window', limit: 1_000_000, windowMs: WINDOW_MS },
        },
      };
      fleet = await startPodFleet({ pods: PODS, config });
    }, 120_000);
    afterAll(async () => {
      await fleet?.stop();
      await redis?.stop();
    });

    it('decides on Redis within 100 ms of every fault ending, answers within the deadline plus 50 ms during it', async () => {
      const run = await runChaos(redis, fleet);
      report(failureMode, run);
      MODES[failureMode](run);
      expectRecovery(run);
      expectFaultAnswersInTime(run);
    }, 120_000);
  },
);
