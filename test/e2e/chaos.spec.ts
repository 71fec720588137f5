import { setTimeout as sleep } from 'node:timers/promises';
import type { PodConfig } from '../../bench/pods/pod-config.js';
import { routePath } from '../../bench/pods/pod-config.js';
import { type PodFleet, startPodFleet } from '../../bench/pods/pod-fleet.js';
import { type RedisServer, sendRawCommand, startRedisServer } from '../support/redis-server.js';
import { type LoadSample, percentile, startSteadyLoad } from '../support/steady-load.js';

const PODS = 3;
/** Fixed windows of one second, so a run of seconds holds many healthy windows. */
const WINDOW_MS = 1_000;
const LIMIT = 20;
const TIMEOUT_MS = 100;
/** Each fault lasts this long (SCRIPT FLUSH is instant). */
const FAULT_MS = 1_500;
/** Limiting must be correct again this soon after Redis is back. */
const RECOVERY_MS = 2_000;
/** After each recovery, at least one whole healthy window before the next fault. */
const SETTLE_MS = RECOVERY_MS + 2 * WINDOW_MS;
const CLIENTS = [
  { key: 'over-1', perSecond: 2 * LIMIT },
  { key: 'over-2', perSecond: 2 * LIMIT },
  { key: 'under-1', perSecond: LIMIT / 2 },
  { key: 'under-2', perSecond: LIMIT / 2 },
];

interface Fault {
  readonly name: string;
  /** Epoch ms: from the fault's start until Redis is back. */
  start: number;
  end: number;
  /** The largest event-loop delay of any pod during the fault, in ms. */
  podLagMs: number;
}

/** Each fault in turn: starts it, and resolves once Redis is back. */
const FAULTS: readonly [string, (redis: RedisServer) => Promise<void>][] = [
  [
    'killed and restarted',
    async (redis) => {
      await redis.kill();
      await sleep(FAULT_MS);
      await redis.restart();
    },
  ],
  [
    'CLIENT PAUSE',
    async (redis) => {
      await sendRawCommand(redis.port, ['CLIENT', 'PAUSE', String(FAULT_MS), 'ALL']);
      await sleep(FAULT_MS);
    },
  ],
  [
    'SIGSTOP, then SIGCONT',
    async (redis) => {
      await redis.pause(FAULT_MS);
      await sleep(FAULT_MS);
    },
  ],
  [
    'SCRIPT FLUSH',
    async (redis) => {
      await sendRawCommand(redis.port, ['SCRIPT', 'FLUSH']);
    },
  ],
  [
    'out of memory (maxmemory, noeviction)',
    async (redis) => {
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory', '1']);
      await sleep(FAULT_MS);
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory', '0']);
    },
  ],
];

/** Steady load on a fleet while every fault strikes in turn; the samples and the faults' times. */
async function runChaos(redis: RedisServer, fleet: PodFleet) {
  const load = startSteadyLoad(
    fleet.ports.map((port) => `http://127.0.0.1:${port}${routePath('chaos')}`),
    CLIENTS,
  );
  // Warm-up: connections, JIT and the script load; judged like any healthy time.
  await sleep(2 * WINDOW_MS);
  const faults: Fault[] = [];
  for (const [name, inject] of FAULTS) {
    await fleet.loopDelays();
    const fault: Fault = { name, start: Date.now(), end: 0, podLagMs: 0 };
    await inject(redis);
    fault.end = Date.now();
    fault.podLagMs = Math.max(...(await fleet.loopDelays()));
    faults.push(fault);
    await sleep(SETTLE_MS);
  }
  return { samples: await load.stop(), faults };
}

/** The epoch ms interval in which the store decided (or, without stamps, the request ran). */
const decisionSpan = (sample: LoadSample): [number, number] => [
  sample.decisionStartedAt ?? sample.sentAt,
  sample.decisionEndedAt ?? sample.doneAt,
];

const overlaps = (sample: LoadSample, from: number, to: number) => {
  const [lo, hi] = [sample.sentAt, sample.doneAt];
  return lo <= to && hi >= from;
};

/** The fixed windows that lie wholly outside every fault and its recovery time. */
function healthyWindows(samples: readonly LoadSample[], faults: readonly Fault[]): Set<number> {
  const first = Math.floor(samples[0].sentAt / WINDOW_MS) + 1;
  const last = Math.floor(samples.at(-1)!.sentAt / WINDOW_MS) - 1;
  const healthy = new Set<number>();
  for (let w = first; w <= last; w++) {
    const [from, to] = [w * WINDOW_MS, (w + 1) * WINDOW_MS];
    if (faults.every((fault) => to <= fault.start || from >= fault.end + RECOVERY_MS)) {
      healthy.add(w);
    }
  }
  return healthy;
}

/** Admissions per client and healthy window, counting those decided wholly inside it. */
function admissionsInHealthyWindows(samples: readonly LoadSample[], healthy: Set<number>) {
  const counts = new Map<string, number>();
  for (const sample of samples) {
    if (sample.status !== 200) continue;
    const [lo, hi] = decisionSpan(sample).map((t) => Math.floor(t / WINDOW_MS));
    if (lo !== hi || !healthy.has(lo)) continue;
    const key = `${sample.client} in window ${lo}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** The assertions both modes share: limits hold in healthy windows, and recover in time. */
function expectHealthyLimiting(samples: readonly LoadSample[], faults: readonly Fault[]): void {
  const healthy = healthyWindows(samples, faults);
  expect(healthy.size).toBeGreaterThanOrEqual(FAULTS.length);
  const overLimit = [...admissionsInHealthyWindows(samples, healthy)].filter(
    ([, admitted]) => admitted > LIMIT,
  );
  expect(overLimit).toEqual([]);
  const inHealthy = (sample: LoadSample) => {
    const [lo, hi] = decisionSpan(sample).map((t) => Math.floor(t / WINDOW_MS));
    return healthy.has(lo) && healthy.has(hi);
  };
  const underDenied = samples.filter(
    (sample) => sample.client.startsWith('under') && sample.status === 429 && inHealthy(sample),
  );
  expect(underDenied).toEqual([]);
  // From RECOVERY_MS after each fault, Redis decides every request and denies the excess.
  for (const fault of faults) {
    const after = samples.filter(
      (sample) => sample.sentAt >= fault.end + RECOVERY_MS && sample.sentAt < fault.end + SETTLE_MS,
    );
    expect({ fault: fault.name, undecided: after.filter((s) => !s.decided).length }).toEqual({
      fault: fault.name,
      undecided: 0,
    });
    expect(after.some((sample) => sample.status === 429)).toBe(true);
  }
}

function report(mode: string, samples: readonly LoadSample[], faults: readonly Fault[]): void {
  const failed = samples.filter((sample) => sample.status === 0);
  if (failed.length > 0) {
    console.log(
      `chaos, failureMode '${mode}': no response to ${failed.length} requests: ${[...new Set(failed.map((s) => s.error))].join('; ')}`,
    );
  }
  const lines = faults.map((fault) => {
    const during = samples.filter((sample) => overlaps(sample, fault.start, fault.end));
    const statuses: Record<number, number> = {};
    for (const { status } of during) statuses[status] = (statuses[status] ?? 0) + 1;
    const errors = [...new Set(during.flatMap((sample) => sample.error ?? []))];
    const p99 = percentile(
      during.map((sample) => sample.doneAt - sample.sentAt),
      99,
    );
    return `  ${fault.name}: ${fault.end - fault.start} ms, pod lag ${fault.podLagMs.toFixed(0)} ms, p99 ${p99.toFixed(0)} ms, statuses ${JSON.stringify(statuses)}${errors.length > 0 ? `, errors ${errors.join('; ')}` : ''}`;
  });
  console.log(
    `chaos, failureMode '${mode}', ${samples.length} requests, p99 ` +
      `${JSON.stringify(faultLatency(samples, faults))} ms:\n${lines.join('\n')}`,
  );
}

/**
 * p99 latency of the requests that overlapped a fault that lasted, over all of them (one
 * fault holds too few requests for a 99th percentile that is not just its maximum), and the
 * largest event-loop delay any pod had meanwhile: a pod that is late itself waits longer
 * for its answer by design (see "Late is not silent" in the README), up to `maxWait`.
 */
function faultLatency(samples: readonly LoadSample[], faults: readonly Fault[]) {
  const lasting = faults.filter((fault) => fault.end - fault.start >= FAULT_MS);
  const latencies = samples
    .filter((sample) => lasting.some((fault) => overlaps(sample, fault.start, fault.end)))
    .map((sample) => sample.doneAt - sample.sentAt);
  expect(latencies.length).toBeGreaterThan(300);
  return {
    p99: percentile(latencies, 99),
    podLag: Math.round(Math.max(...lasting.map((fault) => fault.podLagMs))),
    patienceMargin: Math.round(
      PATIENCE_FACTOR * Math.max(...lasting.map((fault) => slowestAnswerBefore(samples, fault))),
    ),
  };
}

/**
 * The library waits for an answer its deadline plus four times the slowest answer of the
 * last second or two (see "Late is not silent" in the README): the slowest store call the
 * pods stamped in the 2 s before a fault, measured as the pods measure it.
 */
const PATIENCE_FACTOR = 4;
function slowestAnswerBefore(samples: readonly LoadSample[], fault: Fault): number {
  const calls = samples
    .filter((sample) => sample.doneAt <= fault.start && sample.doneAt > fault.start - 2_000)
    .filter(
      (sample) => sample.decisionStartedAt !== undefined && sample.decisionEndedAt !== undefined,
    )
    .map((sample) => sample.decisionEndedAt! - sample.decisionStartedAt!);
  return calls.length > 0 ? Math.max(...calls) : 0;
}

const statusesOf = (samples: readonly LoadSample[]) =>
  [...new Set(samples.map((sample) => sample.status))].sort();

const MODES = {
  /** No 5xx at all, and a fault costs a request no more than the deadline. */
  open(samples: readonly LoadSample[], faults: readonly Fault[]) {
    expect(statusesOf(samples)).toEqual([200, 429]);
    // Within the deadline plus 50 ms, plus the pods' own lag (a few ms on a quiet machine)
    // and the patience margin over recent answer times (a few ms when answers are quick).
    const { p99, podLag, patienceMargin } = faultLatency(samples, faults);
    expect(p99).toBeLessThanOrEqual(TIMEOUT_MS + 50 + podLag + patienceMargin);
  },
  /** 503 with Retry-After, and only from a fault's start until limiting is due back. */
  closed(samples: readonly LoadSample[], faults: readonly Fault[]) {
    expect(statusesOf(samples)).toEqual([200, 429, 503]);
    const outOfFault = samples
      .filter(
        (sample) =>
          sample.status === 503 &&
          faults.every((fault) => !overlaps(sample, fault.start, fault.end + RECOVERY_MS)),
      )
      .map((sample) => {
        const previous = faults.filter((fault) => fault.end <= sample.sentAt).at(-1);
        return `${sample.sentAt - (previous?.end ?? 0)} ms after ${previous?.name ?? 'start'}`;
      });
    expect(outOfFault).toEqual([]);
    const unavailable = samples.filter((sample) => sample.status === 503);
    expect(unavailable.every((sample) => Number(sample.retryAfter) >= 1)).toBe(true);
  },
  /**
   * As open, and what a pod admits on its own (no store decision stamped) stays within its
   * share of the limit in every window.
   */
  local(samples: readonly LoadSample[], faults: readonly Fault[]) {
    const share = Math.floor(LIMIT / PODS);
    const local = new Map<string, number>();
    for (const sample of samples) {
      if (sample.status !== 200 || sample.decisionStartedAt !== undefined) continue;
      const [lo, hi] = [sample.sentAt, sample.doneAt].map((t) => Math.floor(t / WINDOW_MS));
      if (lo !== hi) continue;
      const key = `${sample.client} on pod ${sample.target} in window ${lo}`;
      local.set(key, (local.get(key) ?? 0) + 1);
    }
    expect(local.size).toBeGreaterThan(0);
    expect([...local].filter(([, admitted]) => admitted > share)).toEqual([]);
    MODES.open(samples, faults);
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
        routes: { chaos: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WINDOW_MS } },
      };
      fleet = await startPodFleet({ pods: PODS, config });
    }, 120_000);
    afterAll(async () => {
      await fleet?.stop();
      await redis?.stop();
    });

    it('keeps its promises through every fault', async () => {
      const { samples, faults } = await runChaos(redis, fleet);
      report(failureMode, samples, faults);
      MODES[failureMode](samples, faults);
      expectHealthyLimiting(samples, faults);
    }, 120_000);
  },
);
