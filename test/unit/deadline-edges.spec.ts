import { jest } from '@jest/globals';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeadlineExceededError, SilenceMeter } from '../../lib/deadline.js';

/**
 * What deadline.spec.ts leaves open: answers to other requests as signs of life, how long the
 * meter remembers a slow answer (on a stubbed clock), and each rule held to the millisecond
 * on Jest's fake clock.
 */
const silent = () => new Promise<never>(() => undefined);
/** Timers may fire up to a millisecond early by performance.now() (see deadline.spec.ts). */
const EARLY_MS = 2;

describe('withDeadline', () => {
  it("counts another request's answer as a sign of life: silence starts again from it", async () => {
    const meter = new SilenceMeter();
    const startedAt = performance.now();
    const waiting = meter.withDeadline(silent(), { patience: 40, timeout: 40, maxWait: 5_000 });
    let answer!: (value: string) => void;
    const other = meter.withDeadline(new Promise<string>((resolve) => (answer = resolve)), {
      patience: 5_000,
      timeout: 5_000,
      maxWait: 5_000,
    });
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

/**
 * Jest's fake clock runs an immediate queued by a timer a millisecond later, so a check the
 * timer queues at t runs at t + 1 here.
 */
describe('withDeadline on a fake clock', () => {
  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
  });
  afterEach(() => jest.useRealTimers());

  /** Runs the fake clock to `ms` after `from`, a millisecond at a time. */
  const until = async (ms: number, from: number) => {
    while (performance.now() - from < ms) {
      jest.advanceTimersByTime(1);
      await Promise.resolve();
      await Promise.resolve();
    }
  };
  const settlement = (pending: Promise<unknown>) => {
    const seen: { error?: Error; value?: unknown } = {};
    pending.then(
      (value) => (seen.value = value),
      (error: Error) => (seen.error = error),
    );
    return seen;
  };
  const SILENT = 'no answer within 40 ms (store silent)';

  it('gives a silent store up at its timeout to the millisecond, not before', async () => {
    const from = performance.now();
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 40, timeout: 40, maxWait: 1_000 }),
    );
    await until(40, from);
    expect(seen.error).toBeUndefined();
    await until(41, from);
    expect(seen.error?.message).toBe(SILENT);
    expect(seen.error?.name).toBe('DeadlineExceededError');
  });

  it('counts silence from the last answer heard, whatever later requests wait for', async () => {
    const meter = new SilenceMeter();
    const from = performance.now();
    const seen = settlement(
      meter.withDeadline(silent(), { patience: 40, timeout: 40, maxWait: 1_000 }),
    );
    // Its check is due long after the first's: the shared timer must follow the earliest.
    void meter
      .withDeadline(silent(), { patience: 900, timeout: 900, maxWait: 1_000 })
      .catch(() => undefined);
    await until(30, from);
    meter.heard(performance.now());
    await until(70, from);
    expect(seen.error).toBeUndefined();
    await until(71, from);
    expect(seen.error?.message).toBe(SILENT);
  });

  it('waits exactly maxWait while others are answered', async () => {
    const meter = new SilenceMeter();
    const from = performance.now();
    const seen = settlement(
      meter.withDeadline(silent(), { patience: 20, timeout: 20, maxWait: 200 }),
    );
    while (performance.now() - from < 195) {
      await until(performance.now() - from + 5, from);
      meter.heard(performance.now());
    }
    await until(200, from);
    expect(seen.error).toBeUndefined();
    await until(201, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 200 ms (the store answers others, or this process is overloaded)',
    );
  });

  it.each([
    ['an answer', (settle: { resolve: () => void }) => settle.resolve()],
    ['an error', (settle: { reject: () => void }) => settle.reject()],
  ])('does nothing in a check already queued when %s comes', async (_, answer) => {
    const settle = {} as { resolve: () => void; reject: () => void };
    const work = new Promise<void>((resolve, reject) => {
      settle.resolve = resolve;
      settle.reject = () => reject(new Error('reset'));
    });
    const from = performance.now();
    const seen = settlement(
      new SilenceMeter().withDeadline(work, { patience: 40, timeout: 40, maxWait: 1_000 }),
    );
    await until(39, from);
    // The timer fires and queues its check behind I/O; the answer comes before it runs.
    jest.advanceTimersToNextTimer();
    answer(settle);
    await Promise.resolve();
    await Promise.resolve();
    jest.runOnlyPendingTimers();
    await Promise.resolve();
    expect(seen.error?.message ?? 'answered').not.toBe(SILENT);
    expect(jest.getTimerCount()).toBe(0);
  });
});
