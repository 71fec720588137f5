import type { ResponseRecord } from './pod-fleet.js';

export interface AdmissionBounds {
  readonly min: number;
  readonly max: number;
}

/**
 * How many requests of cost 1 a leaky bucket (queue `burst`, draining one request per
 * `intervalMs`) may admit from one run on a fresh key: its queue plus what drained while
 * the run's decisions were being made, bounded from the pods' decision stamps.
 *
 * Let τ₀ be the first decision (admitted: the queue is empty) and I the interval.
 * - At most: the n-th admission (from 0) starts no earlier than τ₀ + n·I, and is admitted
 *   only if it starts at most (burst − 1)·I after its decision τₙ, so
 *   n ≤ burst − 1 + (τₙ − τ₀)/I and A ≤ burst + ⌊(τ_last admitted − τ₀)/I⌋.
 * - At least: `next` = τ₀ + A·I + idle, where idle is time the queue sat empty. After any
 *   decision at least I of work is queued, so the queue can only run empty in a gap of
 *   more than I between decisions, for at most the excess. A denial at τ_d means
 *   next > τ_d + (burst − 1)·I, so A > burst − 1 + (τ_d − τ₀ − idle)/I, that is
 *   A ≥ burst + ⌊(τ_d − τ₀ − idle)/I⌋; and A ≥ burst, since next ≤ τ_d + A·I.
 * Only store decisions count (a pod's deny cache answers some 429s without one).
 * Each τᵢ lies within [decisionStartedAt, decisionEndedAt]: the pods stamp Date.now() on
 * the host that runs Redis, whose TIME the script reads, both truncated to whole ms. The
 * k-th earliest decision lies between the k-th earliest start and end stamps, which bounds
 * every gap between consecutive decisions. Pods must run with unshifted clocks.
 */
export function leakyBucketAdmissionBounds(
  responses: readonly ResponseRecord[],
  burst: number,
  intervalMs: number,
): AdmissionBounds {
  const started: number[] = [];
  const ended: number[] = [];
  let lastAdmittedEnd = -Infinity;
  let lastDeniedStart = -Infinity;
  for (const response of responses) {
    const { status, decisionStartedAt: start, decisionEndedAt: end } = response;
    // A 429 from the pod's deny cache repeats a store denial and changed nothing: no stamps.
    if (status === 429 && start === undefined && end === undefined) continue;
    if (start === undefined || end === undefined || (status !== 200 && status !== 429)) {
      throw new Error(`Only stamped 200 and 429 responses can be bounded (got status ${status})`);
    }
    started.push(start);
    ended.push(end);
    if (status === 200) lastAdmittedEnd = Math.max(lastAdmittedEnd, end);
    else lastDeniedStart = Math.max(lastDeniedStart, start);
  }
  started.sort((a, b) => a - b);
  ended.sort((a, b) => a - b);
  const firstDecisionEarliest = started[0];
  const firstDecisionLatest = ended[0];
  let idleMs = 0;
  for (let k = 0; k + 1 < started.length; k++) {
    idleMs += Math.max(0, ended[k + 1] - started[k] - intervalMs);
  }
  const max = burst + Math.floor((lastAdmittedEnd - firstDecisionEarliest) / intervalMs);
  if (lastDeniedStart === -Infinity) return { min: started.length, max };
  const drainedAtLeast = Math.floor((lastDeniedStart - firstDecisionLatest - idleMs) / intervalMs);
  return { min: burst + Math.max(0, drainedAtLeast), max };
}
