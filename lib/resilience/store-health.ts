import type { FailureMode } from '../interfaces/rate-limit-policy.interface.js';
import { describeFailure } from './outage-log.js';
import { failureKind } from './store-failure-kind.js';

/** What a failure kind means, where the error's own words would name internals. */
const KIND_WORDS = {
  timeout: 'it did not answer within the deadline',
  disconnected: 'its connection is lost',
  circuit_open: 'its circuit breaker is open',
  error: 'it answered with an error',
} as const;

/** What requests get while the store cannot decide, by failure mode. */
const MEANWHILE: Readonly<Record<FailureMode, string>> = {
  open: 'requests pass unlimited',
  closed: 'requests are answered 503',
  local: 'each instance decides alone at its share of each limit',
};

/**
 * Whether the store's last call failed, since when, and why: what a health check reads.
 * Any answer (a decision, a probe, the connection ready again) ends it.
 */
export class StoreHealth {
  /** Epoch ms of the first failure since the last answer. */
  private since: number | undefined;
  /** The last failure, described only when read. */
  private lastError: unknown;

  failed(error: unknown): void {
    this.since ??= Date.now();
    this.lastError = error;
  }

  answered(): void {
    if (this.since === undefined) return;
    this.since = undefined;
    this.lastError = undefined;
  }

  /** Since when the store has been failing, and why in words without internals. */
  failing(): { since: number; cause: string } | undefined {
    if (this.since === undefined) return undefined;
    return { since: this.since, cause: publicCause(this.lastError) };
  }
}

/** What the resilient store knows of the store's health (ResilientStore.health). */
export interface StoreHealthReading {
  readonly notReady: string | undefined;
  readonly failing: { since: number; cause: string } | undefined;
  readonly breakerOpen: boolean;
  readonly nodesWithBreakerOpen: readonly string[];
  /** The failure modes in force, the module's and the routes' (describeFailureModes). */
  readonly failureModes: string;
}

/** Why the store is not deciding, and what requests get meanwhile; undefined while it is. */
export function notDecidingReason(
  { notReady, failing, breakerOpen, nodesWithBreakerOpen, failureModes }: StoreHealthReading,
  failureMode: FailureMode,
): string | undefined {
  const reasons: string[] = [];
  if (notReady !== undefined) reasons.push(notReady);
  if (breakerOpen) reasons.push('its circuit breaker is open');
  const nodes = nodesWithBreakerOpen.length;
  if (nodes > 0) {
    reasons.push(`the circuit breaker of ${nodes} Cluster master${nodes === 1 ? '' : 's'} is open`);
  }
  if (failing) {
    reasons.push(`failing since ${new Date(failing.since).toISOString()}: ${failing.cause}`);
  }
  if (reasons.length === 0) return undefined;
  return (
    `Rate limit store not deciding: ${reasons.join('; ')}. ` +
    `${failureModes} applies: ${MEANWHILE[failureMode]}`
  );
}

/**
 * A failure in words fit for a health answer: the cause OutageLog names for it where it
 * recognizes one (without the message after it, which may hold addresses), else its kind.
 */
function publicCause(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const kind = failureKind(error);
  if (kind === 'timeout') return message;
  const described = describeFailure(error);
  return described === message ? KIND_WORDS[kind] : described.split(' (')[0];
}
