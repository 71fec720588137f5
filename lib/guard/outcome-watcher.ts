import type { ExecutionContext, Logger } from '@nestjs/common';
import type { Charge, RateLimiter } from '../limiter/rate-limiter.service.js';
import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import { ThrottledLog } from '../observability/throttled-log.js';
import { awaitOutcome } from './outcome-waiters.js';
import { responseOf } from './transports.js';
import { RateLimitUnavailableException } from '../rate-limit.exceptions.js';
import { describeFailure } from '../resilience/outage-log.js';

/** Node's response under Express' (itself) and Fastify's (`reply.raw`). */
interface RawResponse {
  readonly statusCode: number;
  readonly writableFinished: boolean;
  readonly closed?: boolean;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * What a response that never went out is judged by: a client that hangs up learns nothing,
 * and one that hung up on a success could not have told, so it is not one.
 */
const CLOSED_EARLY = new Error('the connection closed before the response was sent');

/**
 * Gives back, after the response, the charge of an admitted request to the policies that do
 * not count its outcome (`count` 'failed' or 'succeeded'), once: on HTTP by the final status
 * of the response (whatever filter or guard answered it), on the other transports by what
 * the handler did, as RateLimitOutcomeInterceptor reports it. A refund that fails is logged
 * (at most every 5 s) and changes nothing else: the response has gone already.
 */
export class OutcomeWatcher {
  private readonly failures: ThrottledLog;

  constructor(
    private readonly limiter: Pick<RateLimiter, 'storeNow' | 'refundCharge'>,
    logger: Logger,
  ) {
    this.failures = new ThrottledLog(logger);
  }

  watch(
    context: ExecutionContext,
    clientKeys: readonly string[],
    policies: readonly ResolvedPolicy[],
    costs: readonly number[],
    decision: RateLimitDecision,
  ): void {
    const instant = this.limiter.storeNow();
    const charge: Charge = { clientKeys, policies, costs, decision, instant };
    if (context.getType<string>() !== 'http') {
      awaitOutcome(context.getArgs(), (outcome) =>
        this.settle(context, charge, 'thrown' in outcome ? outcome.thrown : undefined),
      );
      return;
    }
    const response = rawResponse(responseOf(context));
    if (response === undefined) return;
    if (response.closed) return this.settle(context, charge, CLOSED_EARLY);
    response.once('close', () =>
      this.settle(context, charge, response.writableFinished ? response.statusCode : CLOSED_EARLY),
    );
  }

  private settle(context: ExecutionContext, charge: Charge, statusOrError: unknown): void {
    const which: number[] = [];
    const { policies } = charge;
    for (let i = 0; i < policies.length; i++) {
      const { count } = policies[i];
      if (count === 'all') continue;
      if (failed(policies[i], context, statusOrError) !== (count === 'failed')) which.push(i);
    }
    if (which.length === 0) return;
    this.limiter.refundCharge(charge, which).catch((error: unknown) => {
      // The store's own error: the exception's message is the one a client would be told.
      const cause = error instanceof RateLimitUnavailableException ? error.cause : error;
      const reason = describeFailure(cause);
      this.failures.warn(
        `could not give back the charge of ${charge.clientKeys[which[0]]} (${which.map((i) => policies[i].name).join(', ')}): ${reason}`,
      );
    });
  }
}

/** The policy's isFailure (a throw: a failure), else a status >= 400 or anything thrown. */
function failed(policy: ResolvedPolicy, context: ExecutionContext, statusOrError: unknown) {
  if (policy.isFailure) {
    try {
      return policy.isFailure(context, statusOrError) === true;
    } catch {
      return true;
    }
  }
  return typeof statusOrError === 'number' ? statusOrError >= 400 : statusOrError !== undefined;
}

function rawResponse(response: unknown): RawResponse | undefined {
  const raw = (response as { raw?: unknown } | undefined)?.raw ?? response;
  return typeof (raw as RawResponse | undefined)?.once === 'function'
    ? (raw as RawResponse)
    : undefined;
}
