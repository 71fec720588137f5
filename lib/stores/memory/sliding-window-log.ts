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
  giveBack(entries, now, p, chargedAt) {
    const upto = chargedAt ?? now;
    const since = now - p.window;
    const kept = [...entries];
    let removed = 0;
    // Newest first, from the charge's time back, as lua/give-back.lua.
    for (let i = kept.length - 1; i >= 0 && removed < p.cost; i--) {
      if (kept[i] > upto) continue;
      if (kept[i] <= since) break;
      kept.splice(i, 1);
      removed++;
    }
    if (removed === 0) return undefined;
    const last = kept.at(-1);
    return { state: kept, ttlMs: last === undefined ? 0 : last + p.window - now };
  },
};
