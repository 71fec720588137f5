import { randomUUID } from 'node:crypto';
import type { RateLimitPolicy, RateLimiter } from '../../lib/index.js';

/** The "pods" view: one client's requests spread over pods sharing one budget. */
export interface PodsSettings {
  pods: number;
  /** The lease size; the same run is made in exact mode beside it. */
  lease: number;
  limit: number;
  requests: number;
}

/** What one mode gave: admissions, and the store calls they took. */
export interface PodsOutcome {
  admitted: number;
  denied: number;
  storeCalls: number;
  perPod: { admitted: number; storeCalls: number }[];
}

export interface PodsRun {
  settings: PodsSettings;
  exact: PodsOutcome;
  leased: PodsOutcome;
}

/** A pods request the sandbox refuses; the message names the field and what it accepts. */
export class InvalidPodsSettings extends Error {
  override readonly name = 'InvalidPodsSettings';
}

const MAX_PODS = 12;
const MAX_LIMIT = 1_000;
const MAX_REQUESTS = 3_000;
/** Requests in flight at once over all pods, as a busy fleet has them. */
const IN_FLIGHT = 48;
const WINDOW_MS = 3_600_000;
const SIMULATION_TIMEOUT_MS = 5_000;

/** Validates the JSON body of POST /sandbox/pods, which comes straight from a browser. */
export function parsePodsSettings(body: unknown): PodsSettings {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidPodsSettings('body must be a JSON object');
  }
  const input = body as Record<string, unknown>;
  const pods = integerIn(input.pods, 'pods', 1, MAX_PODS);
  const limit = integerIn(input.limit, 'limit', 1, MAX_LIMIT);
  const lease = integerIn(input.lease, 'lease', 1, limit);
  const requests = integerIn(input.requests, 'requests', 1, MAX_REQUESTS);
  return { pods, lease, limit, requests };
}

function integerIn(value: unknown, field: string, min: number, max: number): number {
  if (!Number.isInteger(value) || (value as number) < min || (value as number) > max) {
    throw new InvalidPodsSettings(`${field} must be a whole number from ${min} to ${max}`);
  }
  return value as number;
}

/**
 * Runs the same traffic twice on the library's store, each time on fresh pods (limiters of
 * their own, each with its own leases) and a client key of its own, within one fixed window
 * on a virtual clock: exact mode, then with the lease. Requests go to the pods in turn,
 * IN_FLIGHT at once. A store call is a decision not made from a lease nor the deny cache.
 */
export async function runPods(limiter: RateLimiter, settings: PodsSettings): Promise<PodsRun> {
  const exact = await runMode(limiter, settings, undefined);
  const leased = await runMode(limiter, settings, settings.lease);
  return { settings, exact, leased };
}

async function runMode(
  limiter: RateLimiter,
  { pods, limit, requests }: PodsSettings,
  lease: number | undefined,
): Promise<PodsOutcome> {
  // The middle of a window: every request of the run falls in the same one.
  const now = Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS + WINDOW_MS / 2;
  const fleet = Array.from({ length: pods }, () =>
    limiter.withClock(() => now, { timeout: SIMULATION_TIMEOUT_MS }),
  );
  const key = `sandbox-pods:${randomUUID()}`;
  const policy: RateLimitPolicy = {
    name: 'pods',
    algorithm: 'fixed-window',
    limit,
    window: WINDOW_MS,
    ...(lease !== undefined && { lease }),
  };
  const outcome: PodsOutcome = {
    admitted: 0,
    denied: 0,
    storeCalls: 0,
    perPod: fleet.map(() => ({ admitted: 0, storeCalls: 0 })),
  };
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      const pod = next++ % pods;
      const decision = await fleet[pod].consume(key, policy);
      const called = !decision.leased && !decision.cached;
      if (decision.allowed) outcome.admitted++;
      else outcome.denied++;
      if (called) outcome.storeCalls++;
      if (decision.allowed) outcome.perPod[pod].admitted++;
      if (called) outcome.perPod[pod].storeCalls++;
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, requests) }, worker));
  } finally {
    await Promise.all(fleet.map((pod) => pod.onApplicationShutdown()));
    await limiter.reset(key, policy);
  }
  return outcome;
}
