import { jest } from '@jest/globals';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { DeadlineExceededError, SilenceMeter } from '../../lib/resilience/deadline.js';

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

describe('withDeadline: the shared timer', () => {
  it('moves to a later request due sooner, leaving no other timer behind', async () => {
    const timers = () =>
      process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();
    const meter = new SilenceMeter();
    const answers: (() => void)[] = [];
    const waiting = [1_000, 40].map((patience) =>
      meter.withDeadline(new Promise<void>((resolve) => answers.push(resolve)), {
        patience,
        timeout: patience,
        maxWait: 5_000,
      }),
    );
    expect(timers()).toBe(before + 1);
    answers.forEach((answer) => answer());
    await Promise.all(waiting);
    expect(timers()).toBe(before);
  });
});

describe('withDeadline, after a deadline has settled a request', () => {
  const limits = { patience: 20, timeout: 20, maxWait: 5_000 };
  /** A store call and the functions that answer or fail it later. */
  const late = () => {
    const call = {} as { promise: Promise<string>; answer: () => void; fail: () => void };
    call.promise = new Promise<string>((resolve, reject) => {
      call.answer = () => resolve('late');
      call.fail = () => reject(new Error('reset'));
    });
    return call;
  };

  it.each([
    ['an answer', (call: ReturnType<typeof late>) => call.answer()],
    ['an error', (call: ReturnType<typeof late>) => call.fail()],
  ])('hands %s that comes after it to no handler', async (_, settleLate) => {
    const handled: string[] = [];
    const call = late();
    const outcome = await new SilenceMeter().withDeadline(
      call.promise,
      limits,
      performance.now(),
      (answer) => (handled.push(answer), answer),
      (error) => (handled.push((error as Error).name), 'failed'),
    );
    expect(outcome).toBe('failed');
    settleLate(call);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(handled).toEqual(['DeadlineExceededError']);
  });

  it('keeps watching the other requests when it answers late', async () => {
    const meter = new SilenceMeter();
    const call = late();
    const first = meter.withDeadline(call.promise, limits);
    const other = meter.withDeadline(silent(), { ...limits, patience: 150, timeout: 150 }).then(
      () => 'answered',
      (error: Error) => error.name,
    );
    await expect(first).rejects.toThrow(DeadlineExceededError);
    call.answer();
    // Silent for 150 ms from that answer: the other request still fails at its deadline,
    // well within this wait.
    const outcome = await Promise.race([
      other,
      new Promise((resolve) => setTimeout(resolve, 1_000, 'still waiting')),
    ]);
    expect(outcome).toBe('DeadlineExceededError');
  });
});

describe('SilenceMeter: the third slowest answer of this span and the previous one, on a stubbed clock', () => {
  let now = 0;
  const realNow = performance.now;
  beforeEach(() => {
    performance.now = () => now;
  });
  afterEach(() => {
    performance.now = realNow;
  });

  /** Three answers that took 30 ms, at 10 s: a span whose third slowest is 30. */
  const slowSpan = [
    [10_000, 30, 30],
    [10_000, 30, 30],
    [10_000, 30, 30],
  ];
  // [when the answer came, how long it took, the latency reported after it]
  it.each([
    ['a lone answer counts', [[10_000, 30, 30]]],
    [
      'of two, the faster',
      [
        [10_000, 30, 30],
        [10_500, 10, 10],
      ],
    ],
    [
      'of more, the two slowest are left out',
      [
        [10_000, 50, 50],
        [10_100, 40, 40],
        [10_200, 5, 5],
        [10_300, 10, 10],
        [10_400, 45, 40],
      ],
    ],
    ['a faster answer in the same span does not lower it', [...slowSpan, [10_500, 10, 30]]],
    ['a span lasts 1 s to the millisecond', [...slowSpan, [11_000, 5, 30], [12_001, 1, 1]]],
    ['the previous span is remembered', [...slowSpan, [11_001, 5, 30], [12_002, 7, 7]]],
    ['up to exactly 2 s after it began', [...slowSpan, [12_000, 1, 30]]],
    ['and not a millisecond more', [...slowSpan, [12_001, 1, 1]]],
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

  it('gives up at a check that finds exactly timeout ms of silence', async () => {
    const from = performance.now();
    // Checked at 40 (due at 39, a millisecond late, which is not late enough to excuse it).
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 39, timeout: 40, maxWait: 1_000 }),
    );
    await until(39, from);
    expect(seen.error).toBeUndefined();
    await until(40, from);
    expect(seen.error?.message).toBe(SILENT);
  });

  it('gives up at a check that finds exactly maxWait ms waited, as past maxWait', async () => {
    const from = performance.now();
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 99, timeout: 200, maxWait: 100 }),
    );
    await until(99, from);
    expect(seen.error).toBeUndefined();
    await until(100, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 100 ms (the store answers others, or this process is overloaded)',
    );
  });

  it('excuses a check only when it ran later than a quarter of the timeout', async () => {
    const from = performance.now();
    // Checked at 5, 1 ms late: exactly a quarter of the timeout, which is not later.
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 4, timeout: 4, maxWait: 1_000 }),
    );
    await until(4, from);
    expect(seen.error).toBeUndefined();
    await until(5, from);
    expect(seen.error?.message).toBe('no answer within 4 ms (store silent)');
  });

  it('gives a late check a full timeout more, even when the silence is exactly the timeout', async () => {
    const from = performance.now();
    // Every check here runs 1 ms late, later than a quarter of the 2 ms timeout: so the call
    // waits, a full timeout at a time (checks at 2, 5, 8, 11), until maxWait.
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 1, timeout: 2, maxWait: 10 }),
    );
    await until(10, from);
    expect(seen.error).toBeUndefined();
    await until(11, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 10 ms (the store answers others, or this process is overloaded)',
    );
  });

  it('checks a request that is not silent again at its maxWait, not later', async () => {
    const from = performance.now();
    // Its timeout outlasts its maxWait: the check at 51 finds it not silent, and sets the
    // next for maxWait.
    const seen = settlement(
      new SilenceMeter().withDeadline(silent(), { patience: 50, timeout: 1_000, maxWait: 100 }),
    );
    await until(100, from);
    expect(seen.error).toBeUndefined();
    await until(101, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 100 ms (the store answers others, or this process is overloaded)',
    );
  });

  it('arms the shared timer once for requests due at the same instant, not once each', () => {
    const meter = new SilenceMeter();
    const armed = jest.spyOn(globalThis, 'setTimeout');
    try {
      // The fake clock stands still: all three are due at the same instant.
      for (let i = 0; i < 3; i++) {
        void meter
          .withDeadline(silent(), { patience: 40, timeout: 40, maxWait: 1_000 })
          .catch(() => undefined);
      }
      expect(armed).toHaveBeenCalledTimes(1);
    } finally {
      armed.mockRestore();
    }
  });

  it('checks every request due by the time a check runs, not a timer later', async () => {
    const meter = new SilenceMeter();
    const from = performance.now();
    const limits = { patience: 45, timeout: 20, maxWait: 1_000 };
    const first = settlement(meter.withDeadline(silent(), limits));
    await until(1, from);
    // Due at 46, when the check of the first (due at 45) runs.
    const second = settlement(meter.withDeadline(silent(), limits));
    await until(46, from);
    expect(first.error?.name).toBe('DeadlineExceededError');
    expect(second.error?.name).toBe('DeadlineExceededError');
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
