import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/leaky-bucket.lua; the state is `next`, the time the queue is free again. */
interface LeakyBucketVerdict extends MemoryVerdict {
  interval: number;
  start: number;
}

export const leakyBucket: MemoryAlgorithm<number, LeakyBucketVerdict> = {
  check(nextFree = 0, now, p) {
    const interval = p.window / p.limit;
    const start = Math.max(now, nextFree);
    const wait = start - now;
    const allowed = wait <= (p.burst - p.cost) * interval;
    return {
      interval,
      start,
      allowed,
      delay: allowed ? wait : 0,
      retry: allowed ? 0 : wait - (p.burst - p.cost) * interval,
      remaining: p.burst - wait / interval,
      reset: wait,
    };
  },
  commit(now, p, v) {
    const nextFree = v.start + p.cost * v.interval;
    const backlog = nextFree - now;
    v.remaining = p.burst - backlog / v.interval;
    v.reset = backlog;
    return { state: nextFree, ttlMs: backlog };
  },
  giveBack(nextFree, now, p, chargedAt) {
    const slot = p.cost * (p.window / p.limit);
    const ends = chargedAt !== undefined ? chargedAt + slot : nextFree;
    const ahead = Math.min(slot, ends - now);
    if (ahead <= 0) return undefined;
    const next = Math.max(now, nextFree - ahead);
    return { state: next, ttlMs: next - now };
  },
};
