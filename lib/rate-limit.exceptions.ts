import { HttpException, HttpStatus } from '@nestjs/common';
import type {
  RateLimitCustomBody,
  RateLimitErrorBody,
} from './interfaces/rate-limit-response.interface.js';

/** The limiter's 429 and 503: an `HttpException` carrying `retryAfter`. */
export abstract class RateLimitHttpException extends HttpException {
  /**
   * @param retryAfter whole seconds (at least 1), sent as Retry-After and in the body
   * @param options.body replaces the JSON body; `message` stays the exception's message
   */
  protected constructor(
    status: HttpStatus,
    error: string,
    message: string,
    readonly retryAfter: number,
    options?: { cause?: unknown; body?: RateLimitCustomBody },
  ) {
    super(
      options?.body ??
        ({ statusCode: status, error, message, retryAfter } satisfies RateLimitErrorBody),
      status,
      options,
    );
    this.message = message;
  }
}

const TOO_MANY_REQUESTS = 'Too Many Requests';

/** The body RateLimitExceededException sends unless given one: the guard's 429 without the exception. */
export const limitedBody = (message: string, retryAfter: number) =>
  ({
    statusCode: HttpStatus.TOO_MANY_REQUESTS,
    error: TOO_MANY_REQUESTS,
    message,
    retryAfter,
  }) satisfies RateLimitErrorBody;

/** 429: a policy denied the request. */
export class RateLimitExceededException extends RateLimitHttpException {
  constructor(
    message = 'Too many requests, please retry later.',
    retryAfter = 1,
    body?: RateLimitCustomBody,
  ) {
    super(HttpStatus.TOO_MANY_REQUESTS, TOO_MANY_REQUESTS, message, retryAfter, {
      body: body ?? limitedBody(message, retryAfter),
    });
  }
}

/** 503: the store failed or missed the deadline (the guard throws it under failureMode 'closed'). */
export class RateLimitUnavailableException extends RateLimitHttpException {
  constructor(
    message = 'Rate limiting is unavailable, please retry later.',
    retryAfter = 1,
    cause?: unknown,
    body?: RateLimitCustomBody,
  ) {
    super(HttpStatus.SERVICE_UNAVAILABLE, 'Service Unavailable', message, retryAfter, {
      cause,
      body,
    });
  }
}

/** Whole seconds for Retry-After: rounded up, at least 1. */
export const retryAfterSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000));

/**
 * Builds an exception without capturing a stack: a denial is an answer, not a bug, and the
 * stack through Nest's async frames costs more than the rest of a 429. Error.stackTraceLimit
 * is restored before anything else can run.
 */
export function withoutStack<T extends Error>(create: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return create();
  } finally {
    Error.stackTraceLimit = limit;
  }
}
