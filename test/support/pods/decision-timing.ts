import { AsyncLocalStorage } from 'node:async_hooks';
import type { ServerResponse } from 'node:http';
import type { RateLimiter, RateLimitStore } from '../../../lib/index.js';
import { DECISION_ENDED_HEADER, DECISION_STARTED_HEADER } from './pod-config.js';

/** The response whose request is being decided, carried through the guard to the store. */
const currentResponse = new AsyncLocalStorage<ServerResponse>();

/** Express middleware: every request runs inside its own response's scope. */
export function withResponseScope(
  _request: unknown,
  response: ServerResponse,
  next: () => void,
): void {
  currentResponse.run(response, next);
}

/**
 * Stamps each response with the pod-clock instants that bracket its store decision. The
 * leaky bucket's expected admissions depend on when decisions happened, which neither the
 * client's send/receive times (the guard then waits delayMs) nor the rate limit headers
 * (whole seconds) pin down. The store is wrapped in place because the module builds it
 * from its options and has no slot for a user-supplied store.
 */
export function stampDecisionTimes(store: RateLimitStore): void {
  const decide = store.decide.bind(store);
  store.decide = async (request) => {
    const startedAt = Date.now();
    const decision = await decide(request);
    const response = currentResponse.getStore();
    // Only a decision the store made counts: a stale answer (the script ran after the
    // decision stopped being wanted) charged nothing and ends in the failure mode unless
    // asked again, and a decision later than the deadline finds its response already sent
    // under the failure mode. Unstamped, the harness counts them as failing open.
    if (response && !response.headersSent && !decision.stale) {
      response.setHeader(DECISION_STARTED_HEADER, String(startedAt));
      response.setHeader(DECISION_ENDED_HEADER, String(Date.now()));
    }
    return decision;
  };
}

/**
 * Stamps the responses a pod admitted from units it leased (`decision.leased`), which no
 * store call decided: the units were charged in the store when the lease was taken, so
 * they count as decided, at the instant the pod spent them.
 */
export function stampLeasedDecisions(limiter: RateLimiter): void {
  const decide = limiter.decide.bind(limiter);
  limiter.decide = (...args) => {
    const startedAt = Date.now();
    return decide(...args).then((decision) => {
      const response = currentResponse.getStore();
      if (decision.leased && response && !response.headersSent) {
        response.setHeader(DECISION_STARTED_HEADER, String(startedAt));
        response.setHeader(DECISION_ENDED_HEADER, String(Date.now()));
      }
      return decision;
    });
  };
}
