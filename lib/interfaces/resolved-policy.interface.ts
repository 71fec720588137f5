import type { ExecutionContext } from '@nestjs/common';
import type {
  Algorithm,
  FailureMode,
  FailureTest,
  KeyResolver,
  LimitResolver,
  OutcomeCount,
} from './rate-limit-policy.interface.js';

/** A policy's `cost` as a function of the request. */
export type CostResolver = (context: ExecutionContext) => number | Promise<number>;

/** A policy validated and prepared once, so that deciding a request only reads it. */
export interface ResolvedPolicy {
  readonly name: string;
  readonly algorithm: Algorithm;
  readonly limit: number;
  readonly windowMs: number;
  readonly burst: number;
  /** The largest cost this policy can ever admit; more is refused without asking the store. */
  readonly maxCost: number;
  readonly cost: number | CostResolver;
  readonly keyBy: KeyResolver | undefined;
  readonly scope: 'route' | 'global';
  /** Decided apart from the enforced policies, never denying (see RateLimitPolicy.shadow). */
  readonly shadow: boolean;
  /** How long a denial keeps the client denied (RateLimitPolicy.blockDuration); 0 for none. */
  readonly blockMs: number;
  /** Its own failure mode (RateLimitPolicy.failureMode); undefined: the module's. */
  readonly failureMode: FailureMode | undefined;
  /**
   * The most units one store call may lease to this pod (RateLimitPolicy.lease, capped by the
   * capacity); 0: not leased. A template's is the policy's own, capped when it is sized.
   */
  readonly lease: number;
  /** Which outcomes the policy counts (RateLimitPolicy.count); others are given back. */
  readonly count: OutcomeCount;
  /** RateLimitPolicy.isFailure; undefined: a status >= 400 or a thrown exception. */
  readonly isFailure: FailureTest | undefined;
  /** Appended to the client's hash tag to form this policy's key. */
  readonly keySuffix: string;
  /** The script arguments: limit, window, burst. */
  readonly scriptArgs: readonly string[];
  /**
   * Set when limit or burst is a function: the policy is a template, whose limit, burst,
   * maxCost and scriptArgs mean nothing (NaN) until the guard sizes it for a request
   * (`sizePolicy`, through RequestLimits). Undefined on every policy that can be decided.
   */
  readonly perRequest?: PerRequestLimits;
}

/** What a template's limit and burst are made of: numbers, or functions of the request. */
export interface PerRequestLimits {
  readonly limit: number | LimitResolver;
  /** Undefined for the window algorithms, which ignore burst, and when burst defaults to limit. */
  readonly burst: number | LimitResolver | undefined;
}
