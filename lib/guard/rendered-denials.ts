import type {
  PolicyResult,
  RateLimitDecision,
} from '../interfaces/rate-limit-decision.interface.js';

/** A 429 as the guard sends it, but for the body (see RenderedDenials). */
export interface RenderedDenial {
  /** Name and value of each header, in the order they are set; Retry-After last. */
  readonly headers: readonly (readonly [string, string])[];
  /** Whole seconds, as in Retry-After. */
  readonly retryAfter: number;
  /** The default body's message. */
  readonly message: string;
}

/** What a denial shows of one policy result: enough to tell that two render alike. */
const FIGURES_PER_RESULT = 7;

/**
 * The last 429 the guard rendered on one route, kept while what it shows stays the same. A
 * client hammering a spent limit is shown the same headers and message for a second at a
 * time (they count down in whole seconds), and building those strings each time (then
 * Node flattening and checking each one) was most of what the guard added to a 429.
 */
export class RenderedDenials {
  private figures: (number | string)[] = [];
  private last: RenderedDenial | undefined;

  /**
   * The 429 rendered for a decision that shows the same as this one, if it is the last.
   * `retryAfter` is the decision's, and `tightest` the index of the result the legacy
   * headers describe (-1 without them).
   */
  find(
    decision: RateLimitDecision,
    retryAfter: number,
    tightest: number,
  ): RenderedDenial | undefined {
    const { results } = decision;
    const figures = this.figures;
    if (this.last === undefined || figures.length !== results.length * FIGURES_PER_RESULT + 2) {
      return undefined;
    }
    if (figures[0] !== retryAfter || figures[1] !== tightest) return undefined;
    for (let i = 0, at = 2; i < results.length; i++, at += FIGURES_PER_RESULT) {
      const r = results[i];
      if (
        figures[at] !== r.policy ||
        figures[at + 1] !== shownState(r) ||
        figures[at + 2] !== r.remaining ||
        figures[at + 3] !== Math.ceil(r.resetMs / 1000) ||
        figures[at + 4] !== r.limit ||
        figures[at + 5] !== r.capacity ||
        figures[at + 6] !== r.window
      ) {
        return undefined;
      }
    }
    return this.last;
  }

  /** Keeps `rendered` as the 429 for decisions that show what this one does. */
  keep(
    decision: RateLimitDecision,
    retryAfter: number,
    tightest: number,
    rendered: RenderedDenial,
  ): void {
    const figures: (number | string)[] = [retryAfter, tightest];
    for (const r of decision.results) {
      figures.push(
        r.policy,
        shownState(r),
        r.remaining,
        Math.ceil(r.resetMs / 1000),
        r.limit,
        r.capacity,
        r.window,
      );
    }
    this.figures = figures;
    this.last = rendered;
  }
}

/** Allowed, shadow and beyond capacity (a cost no time lifts) as one number: each changes the message. */
const shownState = (r: PolicyResult): number =>
  (r.allowed ? 1 : 0) + (r.shadow ? 2 : 0) + (r.retryAfterMs === Infinity ? 4 : 0);
