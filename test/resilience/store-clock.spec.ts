import { StoreClock } from '../../lib/resilience/store-clock.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('StoreClock', () => {
  /** A store whose clock reads `offset` ahead of performance.now(), in whole ms. */
  const store = (offset: { ms: number }) => async () => {
    const at = performance.now();
    await settle();
    return Math.floor(at + offset.ms);
  };

  it.each([1_700_000_000_000 - 30_000, 1_700_000_000_000 + 30_000])(
    'maps this process onto a store clock at offset %i: never early, at most a round trip late',
    async (ms) => {
      const clock = new StoreClock(store({ ms }));
      expect(clock.at(performance.now())).toBeUndefined();
      await settle();
      await settle();
      const now = performance.now();
      const mapped = clock.at(now)!;
      expect(mapped).toBeGreaterThanOrEqual(now + ms - 1);
      expect(mapped).toBeLessThanOrEqual(now + ms + 20);
    },
  );

  it('after the store clock jumps, forget() learns the new offset', async () => {
    const offset = { ms: 1_700_000_000_000 };
    const clock = new StoreClock(store(offset));
    clock.at(0);
    await settle();
    await settle();
    offset.ms += 10_000;
    // Still the old offset: ten seconds early on the jumped clock.
    expect(clock.at(performance.now())! - performance.now()).toBeLessThan(offset.ms - 9_000);
    clock.forget();
    expect(clock.at(performance.now())).toBeUndefined();
    await settle();
    await settle();
    const now = performance.now();
    expect(clock.at(now)).toBeGreaterThanOrEqual(now + offset.ms - 1);
  });

  it('stays unknown while the store cannot tell its time', async () => {
    const clock = new StoreClock(() => Promise.reject(new Error('down')));
    clock.at(0);
    await settle();
    expect(clock.at(performance.now())).toBeUndefined();
  });
});
