import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/token-bucket.lua. */
interface TokenBucketState {
  tokens: number;
  ts: number;
}
interface TokenBucketVerdict extends MemoryVerdict {
  interval: number;
  tokens: number;
  ts: number;
}

export const tokenBucket: MemoryAlgorithm<TokenBucketState, TokenBucketVerdict> = {
  check(state, now, p) {
    const interval = p.window / p.limit;
    let tokens = p.burst;
    let ts = now;
    if (state) {
      ts = Math.max(now, state.ts);
      tokens = Math.min(p.burst, state.tokens + (ts - state.ts) / interval);
    }
    const allowed = tokens >= p.cost;
    return {
      interval,
      tokens,
      ts,
      delay: 0,
      allowed,
      retry: allowed ? 0 : (p.cost - tokens) * interval,
      remaining: tokens,
      reset: (p.burst - tokens) * interval,
    };
  },
  commit(now, p, v) {
    const tokens = v.tokens - p.cost;
    v.remaining = tokens;
    v.reset = (p.burst - tokens) * v.interval;
    return { state: { tokens, ts: v.ts }, ttlMs: v.reset + (v.ts - now) };
  },
};
