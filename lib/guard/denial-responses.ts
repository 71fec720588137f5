import type { ExecutionContext, Logger } from '@nestjs/common';
import {
  RateLimitExceededException,
  RateLimitUnavailableException,
  withoutStack,
} from '../rate-limit.exceptions.js';
import type { RateLimitDecision } from '../interfaces/rate-limit-decision.interface.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import { ThrottledLog } from '../observability/throttled-log.js';
import type { RateLimitCustomBody } from '../interfaces/rate-limit-response.interface.js';

/**
 * The 429 and 503 the guard throws, shaped by the limitedResponse and unavailableResponse
 * options. A body function that throws is logged (throttled) and the default body sent.
 */
export class DenialResponses {
  private readonly log: ThrottledLog;

  constructor(
    private readonly options: Pick<
      ResolvedRateLimitOptions,
      'limitedResponse' | 'unavailableResponse'
    >,
    logger: Logger,
  ) {
    this.log = new ThrottledLog(logger);
  }

  limited(
    context: ExecutionContext,
    decision: RateLimitDecision,
    message: string,
    retryAfter: number,
  ): RateLimitExceededException {
    const body = this.customBody(context, decision, message, retryAfter);
    // A denial is an answer, not a bug: no stack is captured for it.
    return withoutStack(
      () => new RateLimitExceededException(this.limitedMessage(message), retryAfter, body),
    );
  }

  unavailable(
    context: ExecutionContext,
    failure: RateLimitUnavailableException,
  ): RateLimitUnavailableException {
    const option = this.options.unavailableResponse;
    if (option === undefined) return failure;
    const { message, retryAfter, cause: error } = failure;
    if (typeof option === 'string') {
      return new RateLimitUnavailableException(option, retryAfter, error);
    }
    const body = this.bodyOf('unavailableResponse', () =>
      option(context, { status: 503, retryAfter, message, error }),
    );
    return new RateLimitUnavailableException(message, retryAfter, error, body);
  }

  /** A limitedResponse string replaces the message. */
  private limitedMessage(message: string): string {
    const option = this.options.limitedResponse;
    return typeof option === 'string' ? option : message;
  }

  /** What a limitedResponse function makes of the 429, if there is one and it does not throw. */
  private customBody(
    context: ExecutionContext,
    decision: RateLimitDecision,
    message: string,
    retryAfter: number,
  ): RateLimitCustomBody | undefined {
    const option = this.options.limitedResponse;
    if (typeof option !== 'function') return undefined;
    return this.bodyOf('limitedResponse', () =>
      option(context, { status: 429, retryAfter, message, decision }),
    );
  }

  private bodyOf(
    option: string,
    build: () => RateLimitCustomBody,
  ): RateLimitCustomBody | undefined {
    try {
      return build();
    } catch (reason) {
      const problem = reason instanceof Error ? reason.message : String(reason);
      this.log.warn(`${option} failed (${problem}); sent the default body`);
      return undefined;
    }
  }
}
