import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/sliding-window-counter.lua. */
interface SlidingCounterState {
  w: number;
  n: number;
  p: number;
}
interface SlidingCounterVerdict extends MemoryVerdict {
  index: number;
  previous: number;
  current: number;
  weight: number;
}

export const slidingWindowCounter: MemoryAlgorithm<SlidingCounterState, SlidingCounterVerdict> = {
  check(state, now, p) {
    const index = Math.floor(now / p.window);
    let previous = 0;
    let current = 0;
    if (state) {
      if (state.w === index) {
        current = state.n;
        previous = state.p;
      } else if (state.w === index - 1) {
        previous = state.n;
      }
    }
    const elapsed = now - index * p.window;
    const weight = 1 - elapsed / p.window;
    const estimate = previous * weight + current;
    const toEnd = (index + 1) * p.window - now;
    const allowed = estimate + p.cost <= p.limit;
    let retry = 0;
    if (!allowed) {
      const within =
        previous > 0
          ? ((previous + current + p.cost - p.limit) * p.window) / previous - elapsed
          : undefined;
      if (within !== undefined && within < toEnd) {
        retry = within;
      } else {
        const intoNext =
          current + p.cost > p.limit ? ((current + p.cost - p.limit) * p.window) / current : 0;
        retry = toEnd + intoNext;
      }
    }
    return {
      index,
      previous,
      current,
      weight,
      delay: 0,
      allowed,
      retry,
      remaining: p.limit - estimate,
      reset: current > 0 ? toEnd + p.window : previous > 0 ? toEnd : 0,
    };
  },
  commit(now, p, v) {
    const current = v.current + p.cost;
    v.remaining = p.limit - (v.previous * v.weight + current);
    v.reset = (v.index + 2) * p.window - now;
    return { state: { w: v.index, n: current, p: v.previous }, ttlMs: v.reset };
  },
  giveBack(state, now, p, chargedAt) {
    const index = Math.floor(now / p.window);
    if (chargedAt !== undefined && Math.floor(chargedAt / p.window) !== index) return undefined;
    if (state.w !== index) return undefined;
    const current = state.n - Math.min(p.cost, state.n);
    return {
      state: { w: index, n: current, p: state.p },
      ttlMs: (index + 1) * p.window - now + p.window,
    };
  },
};
