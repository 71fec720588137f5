import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeadlineExceededError, SilenceMeter, withDeadline } from '../../lib/deadline.js';

/**
 * What deadline.spec.ts leaves open: answers to other requests as signs of life, the timers
 * left behind, and how long the meter remembers a slow answer (on a stubbed clock).
 */
const silent = () => new Promise<never>(() => undefined);
/** Timers may fire up to a millisecond early by performance.now() (see deadline.spec.ts). */
const EARLY_MS = 2;

describe('withDeadline', () => {
  it("counts another request's answer as a sign of life: silence starts again from it", async () => {
    const meter = new SilenceMeter();
    const startedAt = performance.now();
    const waiting = withDeadline(silent(), { patience: 40, timeout: 40, maxWait: 5_000 }, meter);
    let answer!: (value: string) => void;
    const other = withDeadline(
      new Promise<string>((resolve) => (answer = resolve)),
      { patience: 5_000, timeout: 5_000, maxWait: 5_000 },
      meter,
    );
    await nextTurn();
    await new Promise((resolve) => setTimeout(resolve, 30));
    const answeredAt = performance.now();
    answer('ok');
    await expect(other).resolves.toBe('ok');
    await expect(waiting).rejects.toThrow(DeadlineExceededError);
    // Silent for 40 ms from the other answer, not from its own start.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(
      answeredAt - startedAt + 40 - EARLY_MS,
    );
    expect(meter.recentLatency()).toBeGreaterThanOrEqual(30 - EARLY_MS);
  });

  it.each([
    ['an answer', () => Promise.resolve(1)],
    ['an error', () => Promise.reject(new Error('reset'))],
  ])('clears its timer once the store gives %s', async (_, work) => {
    const { setTimeout: realSet, clearTimeout: realClear } = globalThis;
    const armed: unknown[] = [];
    const cleared: unknown[] = [];
    globalThis.setTimeout = ((...args: Parameters<typeof realSet>) => {
      const timer = realSet(...args);
      armed.push(timer);
      return timer;
    }) as typeof realSet;
    globalThis.clearTimeout = ((timer: Parameters<typeof realClear>[0]) => {
      cleared.push(timer);
      realClear(timer);
    }) as typeof realClear;
    try {
      const limits = { patience: 60_000, timeout: 60_000, maxWait: 60_000 };
      await withDeadline(work(), limits, new SilenceMeter()).catch(() => undefined);
    } finally {
      Object.assign(globalThis, { setTimeout: realSet, clearTimeout: realClear });
    }
    expect(armed).toHaveLength(1);
    expect(cleared).toEqual(armed);
  });
});

describe('SilenceMeter: the slowest answer of this span and the previous one, on a stubbed clock', () => {
  let now = 0;
  const realNow = performance.now;
  beforeEach(() => {
    performance.now = () => now;
  });
  afterEach(() => {
    performance.now = realNow;
  });

  // [when the answer came, how long it took, the latency reported after it]
  it.each([
    [
      'a faster answer in the same span does not lower it',
      [
        [10_000, 30, 30],
        [10_500, 10, 30],
      ],
    ],
    [
      'a span lasts 1 s to the millisecond',
      [
        [10_000, 30, 30],
        [11_000, 5, 30],
        [12_001, 1, 1],
      ],
    ],
    [
      'the previous span is remembered',
      [
        [10_000, 30, 30],
        [11_001, 5, 30],
        [12_002, 7, 7],
      ],
    ],
    [
      'up to exactly 2 s after it began',
      [
        [10_000, 30, 30],
        [12_000, 1, 30],
      ],
    ],
    [
      'and not a millisecond more',
      [
        [10_000, 30, 30],
        [12_001, 1, 1],
      ],
    ],
  ])('%s', (_, answers) => {
    const meter = new SilenceMeter();
    expect(meter.recentLatency()).toBe(0);
    const reported = answers.map(([at, took]) => {
      now = at;
      meter.heard(at - took);
      return meter.recentLatency();
    });
    expect(reported).toEqual(answers.map(([, , latency]) => latency));
  });
});
