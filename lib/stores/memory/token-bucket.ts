import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/token-bucket.lua: the level counts tokens times the window. */
interface TokenBucketState {
  level: number;
  ts: number;
}
interface TokenBucketVerdict extends MemoryVerdict {
  capacity: number;
  level: number;
  ts: number;
}

export const tokenBucket: MemoryAlgorithm<TokenBucketState, TokenBucketVerdict> = {
  check(state, now, p) {
    const capacity = p.burst * p.window;
    let level = capacity;
    let ts = now;
    if (state) {
      ts = Math.max(now, state.ts);
      level = Math.min(capacity, state.level + (ts - state.ts) * p.limit);
    }
    const need = p.cost * p.window;
    const allowed = level >= need;
    return {
      capacity,
      level,
      ts,
      delay: 0,
      allowed,
      retry: allowed ? 0 : (need - level) / p.limit,
      remaining: level / p.window,
      reset: (capacity - level) / p.limit,
    };
  },
  commit(now, p, v) {
    const level = v.level - p.cost * p.window;
    v.remaining = level / p.window;
    v.reset = (v.capacity - level) / p.limit;
    return { state: { level, ts: v.ts }, ttlMs: v.reset + (v.ts - now) };
  },
  giveBack(state, now, p) {
    const capacity = p.burst * p.window;
    const ts = Math.max(now, state.ts);
    let level = Math.min(capacity, state.level + (ts - state.ts) * p.limit);
    level += Math.min(p.cost * p.window, capacity - level);
    return { state: { level, ts }, ttlMs: (capacity - level) / p.limit + (ts - now) };
  },
};
