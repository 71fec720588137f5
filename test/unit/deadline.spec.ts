import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { DeadlineExceededError, SilenceMeter, withDeadline } from '../../lib/deadline.js';
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

describe('withDeadline', () => {
  const limits = { patience: 40, timeout: 40, maxWait: 5_000 };

  it("passes the store's answer through", async () => {
    await expect(withDeadline(Promise.resolve(7), limits, new SilenceMeter())).resolves.toBe(7);
  });

  it("passes the store's error through, not a deadline error", async () => {
    const failure = new Error('connection reset');
    await expect(withDeadline(Promise.reject(failure), limits, new SilenceMeter())).rejects.toBe(
      failure,
    );
  });

  it('rejects a silent store after the timeout, well before maxWait', async () => {
    const { error, ms } = await timed(withDeadline(silent(), limits, new SilenceMeter()));
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect((error as Error).message).toBe('no answer within 40 ms (store silent)');
    expect(ms).toBeGreaterThanOrEqual(40 - EARLY_MS);
    expect(ms).toBeLessThan(5_000);
  });

  it('never gives up before its patience', async () => {
    const { error, ms } = await timed(
      withDeadline(silent(), { ...limits, patience: 150 }, new SilenceMeter()),
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
        withDeadline(silent(), { patience: 20, timeout: 150, maxWait: 200 }, meter),
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
      withDeadline(
        silent(),
        { patience: 10, timeout: 10_000, maxWait: 200 },
        new SilenceMeter(),
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
    const pending = withDeadline(silent(), limits, new SilenceMeter());
    await nextTurn(); // the request is on the wire
    block(150); // the timer, due at 40 ms, can only run at 150 ms: too late to judge
    const { error, ms } = await timed(pending, startedAt);
    expect(error).toBeInstanceOf(DeadlineExceededError);
    expect(ms).toBeGreaterThanOrEqual(150 + 40 - EARLY_MS);
  });

  it('settles once: an answer after the deadline changes nothing', async () => {
    let answer!: (value: number) => void;
    const late = new Promise<number>((resolve) => (answer = resolve));
    const pending = withDeadline(late, limits, new SilenceMeter());
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
    answer(1);
    await expect(pending).rejects.toBeInstanceOf(DeadlineExceededError);
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

  it('remembers the slowest recent answer, from asking to hearing', () => {
    const meter = new SilenceMeter();
    expect(meter.recentLatency()).toBe(0);
    meter.heard(performance.now() - 30);
    expect(meter.recentLatency()).toBeGreaterThanOrEqual(30);
    meter.heard(performance.now());
    expect(meter.recentLatency()).toBeGreaterThanOrEqual(30);
  });
});
