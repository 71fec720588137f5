import type { ExecutionContext } from '@nestjs/common';
import type { RateLimitDecision } from './rate-limit-decision.interface.js';

/** Body of every 429 and 503 the limiter answers. */
export interface RateLimitErrorBody {
  statusCode: number;
  error: string;
  message: string;
  /** Whole seconds, equal to the Retry-After header. */
  retryAfter: number;
}

/** A response body of the app's own, in place of RateLimitErrorBody (see the denial options). */
export type RateLimitCustomBody = string | Record<string, unknown>;

/** What a `limitedResponse` / `unavailableResponse` function is told of the answer. */
export interface RateLimitDenial {
  /** 429 (a policy denied) or 503 (the store failed, failureMode 'closed'). */
  readonly status: 429 | 503;
  /** Whole seconds, as sent in Retry-After. */
  readonly retryAfter: number;
  /** The message the default body would carry. */
  readonly message: string;
  /** The decision, for a 429. */
  readonly decision?: RateLimitDecision;
  /** The store's failure, for a 503. */
  readonly error?: unknown;
}

/**
 * A message for the default body, or a function of the request and the denial returning
 * the whole body (an object, sent as JSON, or a string).
 */
export type RateLimitResponseOption =
  string | ((context: ExecutionContext, denial: RateLimitDenial) => RateLimitCustomBody);

/**
 * The body of a response in an OpenAPI document: a Schema Object (`{ type: 'object',
 * properties: ... }`) or a class described with `@ApiProperty`, as `@ApiResponse`'s `schema`
 * and `type` take them.
 */
export type RateLimitOpenApiSchema =
  Readonly<Record<string, unknown>> | (abstract new (...args: never[]) => unknown);

/** The `openApi` option's object form: the schemas of custom bodies. */
export interface RateLimitOpenApiOptions {
  /** The body a `limitedResponse` function returns; without it such a 429 has no schema. */
  readonly limitedSchema?: RateLimitOpenApiSchema;
  /** The body an `unavailableResponse` function returns; without it such a 503 has no schema. */
  readonly unavailableSchema?: RateLimitOpenApiSchema;
}
