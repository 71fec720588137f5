import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/fixed-window.lua. */
interface FixedWindowState {
  w: number;
  n: number;
}
interface FixedWindowVerdict extends MemoryVerdict {
  index: number;
  count: number;
  windowEnd: number;
}

export const fixedWindow: MemoryAlgorithm<FixedWindowState, FixedWindowVerdict> = {
  check(state, now, p) {
    const index = Math.floor(now / p.window);
    const count = state && state.w === index ? state.n : 0;
    const windowEnd = (index + 1) * p.window;
    const allowed = count + p.cost <= p.limit;
    return {
      index,
      count,
      windowEnd,
      delay: 0,
      allowed,
      retry: allowed ? 0 : windowEnd - now,
      remaining: p.limit - count,
      reset: count > 0 ? windowEnd - now : 0,
    };
  },
  commit(now, p, v) {
    const count = v.count + p.cost;
    v.remaining = p.limit - count;
    v.reset = v.windowEnd - now;
    return { state: { w: v.index, n: count }, ttlMs: v.reset };
  },
  giveBack(state, now, p, chargedAt) {
    const index = Math.floor(now / p.window);
    if (chargedAt !== undefined && Math.floor(chargedAt / p.window) !== index) return undefined;
    if (state.w !== index) return undefined;
    const count = state.n - Math.min(p.cost, state.n);
    return { state: { w: index, n: count }, ttlMs: (index + 1) * p.window - now };
  },
};
