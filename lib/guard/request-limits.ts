import { type ExecutionContext, InternalServerErrorException, type Logger } from '@nestjs/common';
import type { LimitResolver } from '../interfaces/rate-limit-policy.interface.js';
import { isPositiveInteger, sizePolicy } from '../config/resolved-policy.js';
import { ThrottledLog } from '../observability/throttled-log.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';

/**
 * Sized policies kept per template, by limit and burst: plans are few, so a request usually
 * gets the same object as the last one of its plan (no allocation, and the deny cache
 * recognises it at once). Bounded for apps whose limits vary per user: past this many, the
 * memo starts over.
 */
const SIZES_KEPT = 256;

/**
 * The dynamic path of one route whose policies have a function for limit or burst: calls
 * them per request and gives the guard the policies sized for that request. Routes without
 * such functions never get here.
 */
export class RequestLimits {
  private readonly log: ThrottledLog;
  private readonly sizes: Map<string, ResolvedPolicy>[];

  /**
   * @param label names the route in messages, e.g. `UsersController.find`
   * @param policies the route's policies: templates (perRequest set) and ready ones
   */
  constructor(
    private readonly label: string,
    private readonly policies: readonly ResolvedPolicy[],
    logger: Logger,
  ) {
    this.log = new ThrottledLog(logger);
    this.sizes = policies.map(() => new Map());
  }

  /**
   * The route's policies for this request: an array at once when every function answered
   * synchronously (no promise on that path), else a promise of it. A function that throws,
   * rejects or gives anything but a positive integer is the app's error: a rejection with a
   * 500 naming route and policy, before anything is charged.
   */
  resolve(context: ExecutionContext): ResolvedPolicy[] | Promise<ResolvedPolicy[]> {
    const sized: (ResolvedPolicy | Promise<ResolvedPolicy>)[] = [];
    let pending = false;
    try {
      for (let i = 0; i < this.policies.length; i++) {
        const policy = this.policies[i];
        const one = policy.perRequest ? this.size(context, policy, i) : policy;
        if (one instanceof Promise) pending = true;
        sized.push(one);
      }
    } catch (error) {
      quiet(sized);
      return Promise.reject(error);
    }
    return pending ? Promise.all(sized) : (sized as ResolvedPolicy[]);
  }

  private size(
    context: ExecutionContext,
    template: ResolvedPolicy,
    index: number,
  ): ResolvedPolicy | Promise<ResolvedPolicy> {
    const { limit, burst } = template.perRequest!;
    const resolvedLimit = this.call(context, template, 'limit', limit);
    let resolvedBurst;
    try {
      resolvedBurst =
        burst === undefined ? undefined : this.call(context, template, 'burst', burst);
    } catch (error) {
      quiet([resolvedLimit]);
      throw error;
    }
    if (resolvedLimit instanceof Promise || resolvedBurst instanceof Promise) {
      return Promise.all([resolvedLimit, resolvedBurst]).then(([l, b]) =>
        this.sized(template, index, l, b),
      );
    }
    return this.sized(template, index, resolvedLimit, resolvedBurst);
  }

  private sized(
    template: ResolvedPolicy,
    index: number,
    limit: number,
    burst: number | undefined,
  ): ResolvedPolicy {
    const id = `${limit}/${burst}`;
    const sizes = this.sizes[index];
    let sized = sizes.get(id);
    if (!sized) {
      if (sizes.size >= SIZES_KEPT) sizes.clear();
      sized = sizePolicy(template, limit, burst);
      sizes.set(id, sized);
    }
    return sized;
  }

  /** A number, or a promise of one when the function answered with a promise. */
  private call(
    context: ExecutionContext,
    template: ResolvedPolicy,
    field: 'limit' | 'burst',
    value: number | LimitResolver,
  ): number | Promise<number> {
    if (typeof value === 'number') return value;
    const failed = (error: unknown) => this.fail(template, `its ${field} function failed`, error);
    let result: unknown;
    try {
      result = value(context);
    } catch (error) {
      throw failed(error);
    }
    if (typeof (result as PromiseLike<unknown> | undefined)?.then === 'function') {
      return Promise.resolve(result).then(
        (answer) => this.check(template, field, answer),
        (error: unknown) => {
          throw failed(error);
        },
      );
    }
    return this.check(template, field, result);
  }

  private check(template: ResolvedPolicy, field: 'limit' | 'burst', result: unknown): number {
    if (!isPositiveInteger(result)) {
      throw this.fail(
        template,
        `its ${field} function gave ${describe(result)}, not a positive integer`,
      );
    }
    return result;
  }

  /**
   * The 500 that answers the request: its message names route and policy for the app's
   * code and log, which adds what the function threw; the client is told neither.
   */
  private fail(
    template: ResolvedPolicy,
    problem: string,
    cause?: unknown,
  ): InternalServerErrorException {
    const message = `Rate limit policy "${template.name}" on ${this.label}: ${problem}`;
    this.log.warn(
      cause === undefined
        ? `${message}; nothing was charged`
        : `${message} (${cause instanceof Error ? cause.message : String(cause)}); nothing was charged`,
    );
    // The client gets the default 500 body: route and policy names are the app's internals.
    const error = new InternalServerErrorException(undefined, { cause });
    error.message = message;
    return error;
  }
}

/** A bad result as a short readable value: `2.5`, `"10"`, `undefined`. */
function describe(value: unknown): string {
  const text =
    typeof value === 'string'
      ? JSON.stringify(value)
      : typeof value === 'bigint'
        ? `${value}n`
        : String(value);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}

/** Promises started before a synchronous failure: their own failure is already answered. */
function quiet(started: readonly unknown[]): void {
  for (const value of started) if (value instanceof Promise) value.catch(() => undefined);
}
