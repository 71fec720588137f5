import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { DeadlineExceededError, SilenceMeter } from '../../lib/resilience/deadline.js';
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

describe('SilenceMeter.withDeadline', () => {
  const limits = { patience: 40, timeout: 40, maxWait: 5_000 };

  it("passes the store's answer through", async () => {
    await expect(new SilenceMeter().withDeadline(Promise.resolve(7), limits)).resolves.toBe(7);
  });

  it("passes the store's error through, not a deadline error", async () => {
    const failure = new Error('connection reset');
    await expect(new SilenceMeter().withDeadline(Promise.reject(failure), limits)).rejects.toBe(
      failure,
    );
  });

  it('rejects a silent store after the timeout, well before maxWait', async () => {
    const startedAt = performance.now();
    const { error, ms } = await timed(
      new SilenceMeter().withDeadline(silent(), limits, startedAt),
      startedAt,
    );
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toBe('no answer within 40 ms (store silent)');
    expect(ms).toBeGreaterThanOrEqual(40 - EARLY_MS);
    expect(ms).toBeLessThan(5_000);
  });

  it('never gives up before its patience', async () => {
    // Counted from the deadline's own start: a cold first call may take milliseconds.
    const startedAt = performance.now();
    const { error, ms } = await timed(
      new SilenceMeter().withDeadline(silent(), { ...limits, patience: 150 }, startedAt),
      startedAt,
    );
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(ms).toBeGreaterThanOrEqual(150 - EARLY_MS);
  });

  it('keeps waiting while the store answers others, up to maxWait and no later', async () => {
    const meter = new SilenceMeter();
    const others = setInterval(() => meter.heard(performance.now()), 5);
    const lateness = watchTimerLateness();
    try {
      const { error, ms } = await timed(
        meter.withDeadline(silent(), { patience: 20, timeout: 150, maxWait: 200 }),
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
      new SilenceMeter().withDeadline(
        silent(),
        { patience: 10, timeout: 10_000, maxWait: 200 },
        askedAt,
      ),
      askedAt,
    );
    expect((error as Error).message).toMatch(/maxWait 200 ms/);
    expect(ms).toBeGreaterThanOrEqual(200 - EARLY_MS);
    expect(ms).toBeLessThan(10_000);
  });

  it('gives a process whose check ran late a full timeout more', async () => {
    const startedAt = performance.now();
    const pending = new SilenceMeter().withDeadline(silent(), limits);
    await nextTurn(); // the request is on the wire
    block(150); // the timer, due at 40 ms, can only run at 150 ms: too late to judge
    const { error, ms } = await timed(pending, startedAt);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(ms).toBeGreaterThanOrEqual(150 + 40 - EARLY_MS);
  });

  it('settles once: an answer after the deadline changes nothing', async () => {
    let answer!: (value: number) => void;
    const late = new Promise<number>((resolve) => (answer = resolve));
    const pending = new SilenceMeter().withDeadline(late, limits);
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
    answer(1);
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it('holds each request of one meter to its own deadline', async () => {
    const meter = new SilenceMeter();
    const startedAt = performance.now();
    const [soon, later] = await Promise.all([
      timed(meter.withDeadline(silent(), limits), startedAt),
      timed(meter.withDeadline(silent(), { ...limits, patience: 150 }), startedAt),
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
      new SilenceMeter().withDeadline(
        new Promise<void>((resolve) => answers.push(resolve)),
        limits,
      ),
    );
    const meter = new SilenceMeter();
    const shared = Array.from({ length: 50 }, () =>
      meter.withDeadline(new Promise<void>((resolve) => answers.push(resolve)), limits),
    );
    expect(timers()).toBe(before + 50 + 1);
    answers.forEach((answer) => answer());
    await Promise.all([...pending, ...shared]);
    expect(timers()).toBe(before);
  });

  it('hands the answer or the failure to its handlers, as then would', async () => {
    const meter = new SilenceMeter();
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
});

describe('SilenceMeter', () => {
  it('measures silence from the later of the send and the last answer heard', async () => {
    const meter = new SilenceMeter();
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
    const meter = new SilenceMeter();
    expect(meter.silentFor(meter.sending())).toBeLessThan(0);
  });

  it('remembers how long recent answers took, from asking to hearing, but for the two slowest', () => {
    const meter = new SilenceMeter();
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
