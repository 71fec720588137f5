import type { MemoryAlgorithm, MemoryVerdict } from './memory-algorithm.js';

/** Mirrors lua/sliding-window-log.lua; the state is the entries' times, ascending. */
interface SlidingLogVerdict extends MemoryVerdict {
  entries: number[];
  count: number;
}

export const slidingWindowLog: MemoryAlgorithm<number[], SlidingLogVerdict> = {
  check(entries = [], now, p) {
    const since = now - p.window;
    const inWindow = entries.filter((time) => time > since);
    const count = inWindow.length;
    const allowed = count + p.cost <= p.limit;
    return {
      entries,
      count,
      delay: 0,
      allowed,
      retry: allowed ? 0 : inWindow[count + p.cost - p.limit - 1] + p.window - now,
      remaining: p.limit - count,
      reset: count > 0 ? entries[entries.length - 1] + p.window - now : 0,
    };
  },
  commit(now, p, v) {
    const kept = v.entries.filter((time) => time > now - p.window);
    const at = kept.findLastIndex((time) => time <= now) + 1;
    kept.splice(at, 0, ...Array<number>(p.cost).fill(now));
    const entries = kept.slice(-p.limit);
    v.remaining = p.limit - (v.count + p.cost);
    v.reset = Math.max(v.reset, p.window);
    return { state: entries, ttlMs: v.reset };
  },
};
