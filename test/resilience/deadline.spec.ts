import { jest } from '@jest/globals';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { DeadlineExceededError, SilenceDetector } from '../../lib/resilience/deadline.js';
import { watchTimerLateness } from '../support/timer-lateness.js';

/** A store call that never answers. */
const silent = () => new Promise<never>(() => undefined);

/** Holds the event loop, as a CPU-bound handler would. */
const block = (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};

/** How long `pending` took to settle, in ms, and how. */
async function timed<T>(
  pending: Promise<T>,
  startedAt = performance.now(),
): Promise<{ value?: T; error?: unknown; ms: number }> {
  const outcome = await pending.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  return { ...outcome, ms: performance.now() - startedAt };
}

/**
 * Timers count from the event loop's cached clock, up to a millisecond behind
 * performance.now(), so they may fire that much early by it; on a shared machine they may
 * fire late by any amount. So: lower bounds only, less this tolerance.
 */
const EARLY_MS = 2;

describe('SilenceDetector.withDeadline', () => {
  const limits = { wantedFor: 40, timeout: 40, maxWait: 5_000 };

  it("passes the store's answer through", async () => {
    await expect(new SilenceDetector().withDeadline(Promise.resolve(7), limits)).resolves.toBe(7);
  });

  it("passes the store's error through, not a deadline error", async () => {
    const failure = new Error('connection reset');
    await expect(new SilenceDetector().withDeadline(Promise.reject(failure), limits)).rejects.toBe(
      failure,
    );
  });

  it('rejects a silent store after the timeout, well before maxWait', async () => {
    const startedAt = performance.now();
    const { error, ms } = await timed(
      new SilenceDetector().withDeadline(silent(), limits, startedAt),
      startedAt,
    );
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toBe('no answer within 40 ms (store silent)');
    expect(ms).toBeGreaterThanOrEqual(40 - EARLY_MS);
    expect(ms).toBeLessThan(5_000);
  });

  it('never gives up before its wantedFor', async () => {
    // Counted from the deadline's own start: a cold first call may take milliseconds.
    const startedAt = performance.now();
    const { error, ms } = await timed(
      new SilenceDetector().withDeadline(silent(), { ...limits, wantedFor: 150 }, startedAt),
      startedAt,
    );
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(ms).toBeGreaterThanOrEqual(150 - EARLY_MS);
  });

  it('keeps waiting while the store answers others, up to maxWait and no later', async () => {
    const meter = new SilenceDetector();
    const others = setInterval(() => meter.heard(performance.now()), 5);
    const lateness = watchTimerLateness();
    try {
      const { error, ms } = await timed(
        meter.withDeadline(silent(), { wantedFor: 20, timeout: 150, maxWait: 200 }),
      );
      expect((error as Error).message).toBe(
        'no answer within maxWait 200 ms (the store answers others, or this process is overloaded)',
      );
      expect(ms).toBeGreaterThanOrEqual(200 - EARLY_MS);
      // Kept by a timer: within how late this process's timers ran meanwhile.
      expect(ms).toBeLessThanOrEqual(200 + lateness() + 25);
    } finally {
      clearInterval(others);
      lateness();
    }
  });

  it('counts maxWait from when the request was asked, not from the call', async () => {
    const askedAt = performance.now() - 150;
    const { error, ms } = await timed(
      new SilenceDetector().withDeadline(
        silent(),
        { wantedFor: 10, timeout: 10_000, maxWait: 200 },
        askedAt,
      ),
      askedAt,
    );
    expect((error as Error).message).toMatch(/maxWait 200 ms/);
    expect(ms).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(ms).toBeLessThan(10_000);
  });

  it('gives a silent store up at a check that ran late, without waiting on', async () => {
    const startedAt = performance.now();
    const pending = new SilenceDetector().withDeadline(silent(), limits);
    await nextTurn(); // the request is on the wire
    block(150); // the timer, due at 40 ms, can only run at 150 ms: the store was silent
    const lateness = watchTimerLateness();
    const { error, ms } = await timed(pending, startedAt);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(ms).toBeGreaterThanOrEqual(150 - EARLY_MS);
    // Excused as late, it would wait on: a quarter of the timeout at a time, or a whole one.
    expect(ms).toBeLessThan(150 + lateness() + 8);
  });

  it('settles once: an answer after the deadline changes nothing', async () => {
    let answer!: (value: number) => void;
    const late = new Promise<number>((resolve) => (answer = resolve));
    const pending = new SilenceDetector().withDeadline(late, limits);
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
    answer(1);
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it('holds each request of one meter to its own deadline', async () => {
    const meter = new SilenceDetector();
    const startedAt = performance.now();
    const [soon, later] = await Promise.all([
      timed(meter.withDeadline(silent(), limits), startedAt),
      timed(meter.withDeadline(silent(), { ...limits, wantedFor: 150 }), startedAt),
    ]);
    expect(soon.error).toBeInstanceOf(DeadlineExceededError);
    expect(soon.ms).toBeGreaterThanOrEqual(40 - EARLY_MS);
    expect(later.error).toBeInstanceOf(DeadlineExceededError);
    expect(later.ms).toBeGreaterThanOrEqual(150 - EARLY_MS);
  });

  it('keeps one timer for all waiting requests, and none once they settle', async () => {
    const timers = () =>
      process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();
    const answers: (() => void)[] = [];
    const pending = Array.from({ length: 50 }, () =>
      new SilenceDetector().withDeadline(
        new Promise<void>((resolve) => answers.push(resolve)),
        limits,
      ),
    );
    const meter = new SilenceDetector();
    const shared = Array.from({ length: 50 }, () =>
      meter.withDeadline(new Promise<void>((resolve) => answers.push(resolve)), limits),
    );
    expect(timers()).toBe(before + 50 + 1);
    answers.forEach((answer) => answer());
    await Promise.all([...pending, ...shared]);
    expect(timers()).toBe(before);
  });

  it('hands the answer or the failure to its handlers, as then would', async () => {
    const meter = new SilenceDetector();
    const now = performance.now();
    const triple = (answer: number) => answer * 3;
    await expect(meter.withDeadline(Promise.resolve(2), limits, now, triple)).resolves.toBe(6);
    const fallBack = (error: unknown) => (error instanceof DeadlineExceededError ? -1 : -2);
    await expect(meter.withDeadline(silent(), limits, now, triple, fallBack)).resolves.toBe(-1);
    await expect(
      meter.withDeadline(Promise.reject(new Error('reset')), limits, now, triple, fallBack),
    ).resolves.toBe(-2);
    const thrown = new Error('handler');
    await expect(
      meter.withDeadline(Promise.resolve(2), limits, now, () => {
        throw thrown;
      }),
    ).rejects.toBe(thrown);
  });

  it("counts another request's answer as a sign of life: silence starts again from it", async () => {
    const meter = new SilenceDetector();
    const startedAt = performance.now();
    const waiting = meter.withDeadline(silent(), { wantedFor: 40, timeout: 40, maxWait: 5_000 });
    let answer!: (value: string) => void;
    const other = meter.withDeadline(new Promise<string>((resolve) => (answer = resolve)), {
      wantedFor: 5_000,
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

describe('SilenceDetector.withDeadline: the shared timer', () => {
  it('moves to a later request due sooner, leaving no other timer behind', async () => {
    const timers = () =>
      process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();
    const meter = new SilenceDetector();
    const answers: (() => void)[] = [];
    const waiting = [1_000, 40].map((wantedFor) =>
      meter.withDeadline(new Promise<void>((resolve) => answers.push(resolve)), {
        wantedFor,
        timeout: wantedFor,
        maxWait: 5_000,
      }),
    );
    expect(timers()).toBe(before + 1);
    answers.forEach((answer) => answer());
    await Promise.all(waiting);
    expect(timers()).toBe(before);
  });
});

describe('SilenceDetector.withDeadline, after a deadline has settled a request', () => {
  const limits = { wantedFor: 20, timeout: 20, maxWait: 5_000 };
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
    const outcome = await new SilenceDetector().withDeadline(
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
    const meter = new SilenceDetector();
    const call = late();
    const first = meter.withDeadline(call.promise, limits);
    const other = meter.withDeadline(silent(), { ...limits, wantedFor: 150, timeout: 150 }).then(
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

describe('SilenceDetector', () => {
  it('measures silence from the later of the send and the last answer heard', async () => {
    const meter = new SilenceDetector();
    const batch = meter.sending();
    expect(meter.sending()).toBe(batch); // one batch per turn of the event loop
    await nextTurn();
    await sleep(30);
    expect(meter.silentFor(batch)).toBeGreaterThanOrEqual(30 - EARLY_MS);
    meter.heard(performance.now());
    expect(meter.silentFor(batch)).toBeLessThan(30);
    await nextTurn();
    expect(meter.sending()).not.toBe(batch);
  });

  it('counts a batch not yet on the wire as not silent', () => {
    const meter = new SilenceDetector();
    expect(meter.silentFor(meter.sending())).toBeLessThan(0);
  });

  it('remembers how long recent answers took, from asking to hearing, but for the two slowest', () => {
    const meter = new SilenceDetector();
    expect(meter.recentLatency()).toBe(0);
    meter.heard(performance.now() - 30);
    expect(meter.recentLatency()).toBeGreaterThanOrEqual(30);
    for (let i = 0; i < 2; i++) meter.heard(performance.now() - 30);
    meter.heard(performance.now());
    expect(meter.recentLatency()).toBeGreaterThanOrEqual(30);
    // One slow answer among many is this process descheduled once, not lasting slowness.
    for (let i = 0; i < 2; i++) meter.heard(performance.now() - 500);
    expect(meter.recentLatency()).toBeLessThan(500);
  });
});

describe('SilenceDetector: the third slowest answer of this span and the previous one, on a stubbed clock', () => {
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
    const meter = new SilenceDetector();
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
describe('SilenceDetector.withDeadline on a fake clock', () => {
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
      new SilenceDetector().withDeadline(silent(), { wantedFor: 40, timeout: 40, maxWait: 1_000 }),
    );
    await until(40, from);
    expect(seen.error).toBeUndefined();
    await until(41, from);
    expect(seen.error?.message).toBe(SILENT);
    expect(seen.error?.name).toBe('DeadlineExceededError');
  });

  it('counts silence from the last answer heard, whatever later requests wait for', async () => {
    const meter = new SilenceDetector();
    const from = performance.now();
    const seen = settlement(
      meter.withDeadline(silent(), { wantedFor: 40, timeout: 40, maxWait: 1_000 }),
    );
    // Its check is due long after the first's: the shared timer must follow the earliest.
    void meter
      .withDeadline(silent(), { wantedFor: 900, timeout: 900, maxWait: 1_000 })
      .catch(() => undefined);
    await until(30, from);
    meter.heard(performance.now());
    await until(70, from);
    expect(seen.error).toBeUndefined();
    await until(71, from);
    expect(seen.error?.message).toBe(SILENT);
  });

  it('waits exactly maxWait while others are answered', async () => {
    const meter = new SilenceDetector();
    const from = performance.now();
    const seen = settlement(
      meter.withDeadline(silent(), { wantedFor: 20, timeout: 20, maxWait: 200 }),
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

  it('judges silence up to when its check was queued, not to when it ran', async () => {
    const from = performance.now();
    // Due at 39, its timer fires at 39 and its check runs at 40: up to 39, all that came
    // had been read, and the store was silent 39 ms; an answer may have come since, unread
    // until the next turn. Due again at once, it is checked in the next turn, at 41.
    const seen = settlement(
      new SilenceDetector().withDeadline(silent(), { wantedFor: 39, timeout: 40, maxWait: 1_000 }),
    );
    await until(40, from);
    expect(seen.error).toBeUndefined();
    await until(41, from);
    expect(seen.error?.message).toBe(SILENT);
  });

  it('gives up at a check that finds exactly maxWait ms waited, as past maxWait', async () => {
    const from = performance.now();
    const seen = settlement(
      new SilenceDetector().withDeadline(silent(), { wantedFor: 99, timeout: 200, maxWait: 100 }),
    );
    await until(99, from);
    expect(seen.error).toBeUndefined();
    await until(100, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 100 ms (the store answers others, or this process is overloaded)',
    );
  });

  it('checks a request that is not silent again at its maxWait, not later', async () => {
    const from = performance.now();
    // Its timeout outlasts its maxWait: the check at 51 finds it not silent, and sets the
    // next for maxWait.
    const seen = settlement(
      new SilenceDetector().withDeadline(silent(), { wantedFor: 50, timeout: 1_000, maxWait: 100 }),
    );
    await until(100, from);
    expect(seen.error).toBeUndefined();
    await until(101, from);
    expect(seen.error?.message).toBe(
      'no answer within maxWait 100 ms (the store answers others, or this process is overloaded)',
    );
  });

  it('arms the shared timer once for requests due at the same instant, not once each', () => {
    const meter = new SilenceDetector();
    const armed = jest.spyOn(globalThis, 'setTimeout');
    try {
      // The fake clock stands still: all three are due at the same instant.
      for (let i = 0; i < 3; i++) {
        void meter
          .withDeadline(silent(), { wantedFor: 40, timeout: 40, maxWait: 1_000 })
          .catch(() => undefined);
      }
      expect(armed).toHaveBeenCalledTimes(1);
    } finally {
      armed.mockRestore();
    }
  });

  it('checks every request due by the time a check runs, not a timer later', async () => {
    const meter = new SilenceDetector();
    const from = performance.now();
    const limits = { wantedFor: 45, timeout: 20, maxWait: 1_000 };
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
      new SilenceDetector().withDeadline(work, { wantedFor: 40, timeout: 40, maxWait: 1_000 }),
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
