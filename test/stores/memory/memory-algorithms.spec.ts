import { fixedWindow } from '../../../lib/stores/memory/fixed-window.js';
import type { MemoryPolicy } from '../../../lib/stores/memory/memory-algorithm.js';
import { slidingWindowCounter } from '../../../lib/stores/memory/sliding-window-counter.js';
import { slidingWindowLog } from '../../../lib/stores/memory/sliding-window-log.js';
import { tokenBucket } from '../../../lib/stores/memory/token-bucket.js';

/**
 * The embedded algorithms' every reported field, worked out by hand, in the states the
 * HTTP-level contracts rarely reach: a previous window that is two windows old, retries that
 * fall within the window or beyond it, entries stamped ahead of the clock (a pod whose clock
 * runs behind). The differential test holds the Lua scripts to the same numbers.
 */
const W = 1_000;
/** A multiple of W plus `ms`, so the window index is 1000. */
const at = (ms: number) => 1_000 * W + ms;

describe('sliding window counter', () => {
  const p: MemoryPolicy = { limit: 10, window: W, burst: 10, cost: 1 };

  it('reports a fresh key as empty, and charges it', () => {
    const v = slidingWindowCounter.check(undefined, at(500), p);
    expect(v).toMatchObject({ allowed: true, remaining: 10, reset: 0, retry: 0 });
    const { state, ttlMs } = slidingWindowCounter.commit(at(500), p, v);
    expect(state).toEqual({ w: 1000, n: 1, p: 0 });
    expect(v).toMatchObject({ remaining: 9, reset: 1_500 });
    expect(ttlMs).toBe(1_500);
  });

  it("weighs the previous window's count, and ignores one two windows old", () => {
    const previous = slidingWindowCounter.check({ w: 999, n: 8, p: 3 }, at(250), p);
    expect(previous).toMatchObject({ allowed: true, remaining: 4, reset: 750 });
    slidingWindowCounter.commit(at(250), p, previous);
    expect(previous).toMatchObject({ remaining: 3, reset: 1_750 });
    const old = slidingWindowCounter.check({ w: 998, n: 8, p: 3 }, at(250), p);
    expect(old).toMatchObject({ allowed: true, remaining: 10, reset: 0 });
  });

  it('retries within the window once the previous one has faded enough', () => {
    // 8 * 0.75 + 4 = 10 in use: one more fits once 8 * (1 - e) + 4 + 1 <= 10, at e = 0.375.
    const v = slidingWindowCounter.check({ w: 1000, n: 4, p: 8 }, at(250), p);
    expect(v).toMatchObject({ allowed: false, remaining: 0, reset: 1_750, retry: 125 });
  });

  it('retries in the next window when the current one alone is over', () => {
    const alone = slidingWindowCounter.check({ w: 1000, n: 10, p: 0 }, at(900), p);
    expect(alone).toMatchObject({ allowed: false, reset: 1_100, retry: 200 });
    // Fading the previous window would take past the window's end (700 > 500): the next
    // window's weight of the current count decides.
    const both = slidingWindowCounter.check({ w: 1000, n: 10, p: 5 }, at(500), p);
    expect(both).toMatchObject({ allowed: false, retry: 600 });
  });

  it('retries at the window end when the cost fills the limit exactly', () => {
    const v = slidingWindowCounter.check({ w: 999, n: 5, p: 0 }, at(500), { ...p, cost: 10 });
    expect(v).toMatchObject({ allowed: false, retry: 500 });
  });
});

describe('sliding window log', () => {
  const p: MemoryPolicy = { limit: 3, window: W, burst: 3, cost: 1 };

  it('reports what is left and when the newest entry leaves the window', () => {
    const v = slidingWindowLog.check([at(100), at(200)], at(500), p);
    expect(v).toMatchObject({ allowed: true, remaining: 1, reset: 700 });
    const { state, ttlMs } = slidingWindowLog.commit(at(500), p, v);
    expect(state).toEqual([at(100), at(200), at(500)]);
    expect(v).toMatchObject({ remaining: 0, reset: 1_000 });
    expect(ttlMs).toBe(1_000);
    expect(slidingWindowLog.check([], at(500), p)).toMatchObject({ remaining: 3, reset: 0 });
  });

  it('drops entries that left the window, the boundary one included, when charging', () => {
    const v = slidingWindowLog.check([at(-500), at(100)], at(500), p);
    expect(slidingWindowLog.commit(at(500), p, v).state).toEqual([at(100), at(500)]);
  });

  it('keeps entries stamped ahead of the clock after the new one, and lives until they leave', () => {
    const v = slidingWindowLog.check([at(600)], at(500), p);
    expect(v).toMatchObject({ remaining: 2, reset: 1_100 });
    const { state, ttlMs } = slidingWindowLog.commit(at(500), p, v);
    expect(state).toEqual([at(500), at(600)]);
    expect(ttlMs).toBe(1_100);
  });
});

describe('token bucket', () => {
  // Capacity 5 tokens, one token per 1 000 ms; the level counts tokens times the window.
  const p: MemoryPolicy = { limit: 10, window: 10_000, burst: 5, cost: 1 };

  it('reports the time to refill to capacity', () => {
    expect(tokenBucket.check(undefined, at(0), p)).toMatchObject({ remaining: 5, reset: 0 });
    const v = tokenBucket.check({ level: 30_000, ts: at(-1_000) }, at(0), p);
    expect(v).toMatchObject({ allowed: true, remaining: 4, reset: 1_000 });
  });

  it("keeps a state stamped ahead of the clock alive until that stamp's refill is done", () => {
    const v = tokenBucket.check({ level: 30_000, ts: at(500) }, at(0), p);
    expect(v).toMatchObject({ remaining: 3, reset: 2_000 });
    const { state, ttlMs } = tokenBucket.commit(at(0), p, v);
    expect(state).toEqual({ level: 20_000, ts: at(500) });
    expect(ttlMs).toBe(3_000 + 500);
  });
});

describe('fixed window', () => {
  it('reports no reset for a window with nothing counted', () => {
    const p: MemoryPolicy = { limit: 3, window: W, burst: 3, cost: 1 };
    expect(fixedWindow.check(undefined, at(250), p)).toMatchObject({ remaining: 3, reset: 0 });
    expect(fixedWindow.check({ w: 999, n: 3 }, at(250), p)).toMatchObject({ reset: 0 });
  });
});
