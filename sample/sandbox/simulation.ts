import { randomUUID } from 'node:crypto';
import {
  rateLimitHeaders,
  type Algorithm,
  type HeaderStyle as ModuleHeaderStyle,
  type RateLimitDecision,
  type RateLimitPolicy,
  type RateLimiter,
} from '../../lib/index.js';

/** The order of the tabs: the two sliding windows, the two buckets, then the fixed window. */
export const ALGORITHMS = [
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
] as const satisfies readonly Algorithm[];

/** How many requests the "burst" button fires at the same instant. */
export const BURST_SIZE = 15;
/** A run replays every request through five algorithms; this keeps a run well under a second. */
export const MAX_REQUESTS_PER_RUN = 1_000;
/** The span in which the page reports the most admitted requests (the boundary exploit's span). */
export const BUSIEST_SPAN_MS = 2_000;
/** Each half of the boundary exploit lasts this long, so both quotas land within two seconds. */
const EXPLOIT_HALF_MS = 1_000;
/** The name the simulated policy carries in keys and headers. */
const POLICY_NAME = 'sandbox';
/** Deadline of one simulated decision; the module's own (100 ms by default) is for live traffic. */
const SIMULATION_TIMEOUT_MS = 5_000;

/** The styles a client can receive headers in (a simulation with no headers shows nothing). */
export type HeaderStyle = Exclude<ModuleHeaderStyle, 'none'>;

export type Traffic =
  | { pattern: 'steady'; ratePerSecond: number; durationSeconds: number }
  | { pattern: 'burst' }
  | { pattern: 'boundary-exploit' }
  /**
   * Login attempts at a steady rate, `successPercent` of them with the right password: the
   * policy counts only failures (`count: 'failed'`), gives each success back after its
   * response, and blocks for a window once it denies (`blockDuration`).
   */
  | { pattern: 'login'; ratePerSecond: number; durationSeconds: number; successPercent: number };

export interface SimulationSettings {
  limit: number;
  windowMs: number;
  /** Token-bucket capacity and leaky-bucket queue size; the window algorithms ignore it. */
  burst: number;
  traffic: Traffic;
  headerStyle: HeaderStyle;
}

export interface TrafficPlan {
  /** When each request arrives, in ms after the run starts; ascending. */
  arrivalsMs: number[];
  /** How far into a window the run starts (fixed and counter windows are epoch-aligned). */
  startPhaseMs: number;
}

/**
 * 'failed' and 'refunded': login attempts the policy admitted, a wrong password (401,
 * counted) and a right one (200, given back after its response).
 */
export type Outcome = 'admitted' | 'delayed' | 'denied' | 'failed' | 'refunded';

/** One request as the library judged it, and what its client would have seen. */
export interface SimulatedRequest {
  atMs: number;
  outcome: Outcome;
  /** When the handler runs: arrival plus the leaky bucket's delay; null when denied. */
  proceedsAtMs: number | null;
  status: 200 | 401 | 429;
  remaining: number;
  resetMs: number;
  retryAfterMs: number;
  delayMs: number;
  headers: Record<string, string>;
  /** Login attempts: whether it had the right password (a denied one is never tried). */
  rightPassword?: boolean;
}

export interface AlgorithmRun {
  algorithm: Algorithm;
  requests: SimulatedRequest[];
  /** Every admitted request, those that waited included. */
  admitted: number;
  /** Admitted after a wait (leaky bucket only). */
  delayed: number;
  denied: number;
  /** Login attempts: admitted with the right password, and given back after the response. */
  refunded: number;
  /** The BUSIEST_SPAN_MS span in which the most admitted requests proceeded. */
  busiestSpan: { fromMs: number; admitted: number };
}

export interface SimulationRun {
  limit: number;
  windowMs: number;
  burst: number;
  traffic: Traffic;
  /** The virtual clock's epoch ms at the start of the run. */
  startEpochMs: number;
  /** The last arrival or, for a delayed request, the last moment one proceeds. */
  endMs: number;
  /** Epoch-aligned window starts within [0, endMs], where fixed and counter windows roll over. */
  windowBoundariesMs: number[];
  algorithms: AlgorithmRun[];
}

/** Arrival times of a traffic pattern; the exploit also chooses where in a window it starts. */
export function planTraffic(traffic: Traffic, limit: number, windowMs: number): TrafficPlan {
  switch (traffic.pattern) {
    case 'steady':
    case 'login': {
      const count = Math.round(traffic.ratePerSecond * traffic.durationSeconds);
      const gapMs = 1_000 / traffic.ratePerSecond;
      return {
        arrivalsMs: Array.from({ length: count }, (_, index) => Math.round(index * gapMs)),
        startPhaseMs: 0,
      };
    }
    case 'burst':
      return { arrivalsMs: new Array<number>(BURST_SIZE).fill(0), startPhaseMs: 0 };
    case 'boundary-exploit': {
      // A full quota spread over the last second before a window boundary, and another over the
      // first second after it: a fixed window counts them in different windows.
      const halfMs = Math.min(EXPLOIT_HALF_MS, windowMs);
      const quota = Array.from({ length: limit }, (_, index) =>
        Math.floor((index * halfMs) / limit),
      );
      return {
        arrivalsMs: [...quota, ...quota.map((atMs) => atMs + halfMs)],
        startPhaseMs: windowMs - halfMs,
      };
    }
  }
}

/**
 * Replays the traffic through all five algorithms of the real library (Lua scripts on Redis, or
 * the embedded store), each on its own virtual clock and its own fresh key, so a minute of
 * traffic takes milliseconds and no run shares a budget with another run or a real client.
 */
export async function runSimulation(
  limiter: RateLimiter,
  settings: SimulationSettings,
): Promise<SimulationRun> {
  const { limit, windowMs, burst, traffic } = settings;
  const plan = planTraffic(traffic, limit, windowMs);
  const startEpochMs = Math.ceil(Date.now() / windowMs) * windowMs + plan.startPhaseMs;
  const algorithms = await Promise.all(
    ALGORITHMS.map(async (algorithm): Promise<AlgorithmRun> => {
      const policy: RateLimitPolicy = { name: POLICY_NAME, algorithm, limit, window: windowMs };
      if (algorithm === 'token-bucket' || algorithm === 'leaky-bucket') policy.burst = burst;
      if (traffic.pattern === 'login') {
        policy.count = 'failed';
        policy.blockDuration = windowMs;
      }
      const requests = await replay(
        limiter,
        policy,
        plan.arrivalsMs,
        startEpochMs,
        settings.headerStyle,
        traffic.pattern === 'login' ? traffic.successPercent : undefined,
      );
      return summarize(algorithm, requests);
    }),
  );
  const endMs = Math.max(
    0,
    ...algorithms.flatMap((run) => run.requests.map((r) => r.proceedsAtMs ?? r.atMs)),
  );
  return {
    limit,
    windowMs,
    burst,
    traffic,
    startEpochMs,
    endMs,
    windowBoundariesMs: windowBoundaries(plan.startPhaseMs, windowMs, endMs),
    algorithms,
  };
}

/**
 * Whether login attempt `index` has the right password: `percent` of the attempts, spread
 * evenly (the attempt where the running share first reaches each whole success).
 */
export const rightPassword = (index: number, percent: number): boolean =>
  Math.floor(((index + 1) * percent) / 100) > Math.floor((index * percent) / 100);

/**
 * One request at a time on a virtual clock. Simulations are not latency-critical, so their
 * decisions get a relaxed deadline: a loaded machine should not cut a replay short. With
 * `successPercent` the requests are login attempts: one the policy admits with the right
 * password is given back at once, as the guard does after its response.
 */
async function replay(
  limiter: RateLimiter,
  policy: RateLimitPolicy,
  arrivalsMs: readonly number[],
  startEpochMs: number,
  headerStyle: HeaderStyle,
  successPercent?: number,
): Promise<SimulatedRequest[]> {
  let virtualNow = startEpochMs;
  const virtualLimiter = limiter.withClock(() => virtualNow, { timeout: SIMULATION_TIMEOUT_MS });
  const key = `sandbox:${randomUUID()}`;
  try {
    const requests: SimulatedRequest[] = [];
    // One at a time: each decision must see the state the previous one left.
    for (const [index, atMs] of arrivalsMs.entries()) {
      virtualNow = startEpochMs + atMs;
      const decision = await virtualLimiter.consume(key, policy);
      const request = toSimulatedRequest(atMs, decision, headerStyle);
      if (successPercent !== undefined) {
        const right = rightPassword(index, successPercent);
        request.rightPassword = right;
        if (decision.allowed) {
          if (right) await virtualLimiter.refund(key, policy);
          request.outcome = right ? 'refunded' : 'failed';
          request.status = right ? 200 : 401;
        }
      }
      requests.push(request);
    }
    return requests;
  } finally {
    await virtualLimiter.reset(key, policy);
    // Takes its listener off the app's Redis client (see RateLimiter.withClock).
    await virtualLimiter.onApplicationShutdown();
  }
}

function toSimulatedRequest(
  atMs: number,
  decision: RateLimitDecision,
  headerStyle: HeaderStyle,
): SimulatedRequest {
  const [result] = decision.results;
  const headers = rateLimitHeaders(decision, headerStyle);
  if (!decision.allowed) {
    // The guard adds Retry-After to a 429; rateLimitHeaders covers only the RateLimit fields.
    headers['Retry-After'] = String(Math.max(1, Math.ceil(result.retryAfterMs / 1_000)));
  }
  return {
    atMs,
    outcome: !decision.allowed ? 'denied' : result.delayMs > 0 ? 'delayed' : 'admitted',
    proceedsAtMs: decision.allowed ? atMs + result.delayMs : null,
    status: decision.allowed ? 200 : 429,
    remaining: result.remaining,
    resetMs: result.resetMs,
    retryAfterMs: result.retryAfterMs,
    delayMs: result.delayMs,
    headers,
  };
}

function summarize(algorithm: Algorithm, requests: SimulatedRequest[]): AlgorithmRun {
  const proceedTimes = requests.flatMap((r) => (r.proceedsAtMs === null ? [] : [r.proceedsAtMs]));
  return {
    algorithm,
    requests,
    admitted: proceedTimes.length,
    delayed: requests.filter((r) => r.outcome === 'delayed').length,
    denied: requests.filter((r) => r.outcome === 'denied').length,
    refunded: requests.filter((r) => r.outcome === 'refunded').length,
    busiestSpan: busiestSpan(proceedTimes, BUSIEST_SPAN_MS),
  };
}

/** The half-open span [from, from + spanMs) holding the most of `times`, earliest on ties. */
export function busiestSpan(
  times: readonly number[],
  spanMs: number,
): { fromMs: number; admitted: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let busiest = { fromMs: sorted[0] ?? 0, admitted: 0 };
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && sorted[end] < sorted[start] + spanMs) end++;
    if (end - start > busiest.admitted) busiest = { fromMs: sorted[start], admitted: end - start };
  }
  return busiest;
}

function windowBoundaries(startPhaseMs: number, windowMs: number, endMs: number): number[] {
  const boundaries: number[] = [];
  for (let atMs = (windowMs - startPhaseMs) % windowMs; atMs <= endMs; atMs += windowMs) {
    boundaries.push(atMs);
  }
  return boundaries;
}
