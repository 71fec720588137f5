import { setTimeout as sleep } from 'node:timers/promises';
import type { GiveBackRequest } from '../../lib/interfaces/rate-limit-store.interface.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import { HoldingTable } from '../../lib/limiter/holding-table.js';

/** The bounded table of what a pod holds: sweeping idle clients, evicting past its bound. */
const [policy, bucket] = resolvePolicies(
  [
    { name: 'fw', algorithm: 'fixed-window', limit: 100, window: 1_000, lease: 10 },
    { name: 'tb', algorithm: 'token-bucket', limit: 100, window: 1_000, lease: 10 },
  ],
  {
    label: 'test',
    defaultScope: 'global',
  },
);

/** A table on a clock the test sets (`clock.now`), or on Date.now when `realTime`. */
function table(realTime = false) {
  const returned: GiveBackRequest[] = [];
  const clock = { now: 0 };
  const holdings = new HoldingTable(
    async (request) => {
      returned.push(request);
      return request.units;
    },
    (clientKey) => `rl:{${clientKey}}`,
    0,
    { now: realTime ? Date.now : () => clock.now, appClock: true, realTime },
  );
  const units = () => returned.reduce((sum, request) => sum + request.units, 0);
  return { holdings, returned, clock, units };
}

describe('HoldingTable', () => {
  it('forgets idle clients as new ones come, and keeps busy ones', () => {
    const { holdings } = table();
    holdings.get('busy', policy, 0).renew(5, 0, 0, 1_000);
    for (let i = 0; i < 50; i++) holdings.get(`idle-${i}`, policy, 0);
    // The busy client's units are still there: the same holding comes back.
    expect(holdings.get('busy', policy, 10).units).toBe(5);
  });

  it('gives back and forgets one busy client past 10,000 clients', async () => {
    const { holdings, returned } = table();
    for (let i = 0; i < 10_000; i++) holdings.get(`c${i}`, policy, 0).renew(3, 0, 0, 1_000);
    expect(returned).toHaveLength(0);
    holdings.get('one-more', policy, 0);
    await Promise.resolve();
    expect(returned).toHaveLength(1);
    expect(returned[0]).toMatchObject({ policy, units: 3, window: 0, now: 0, ttlFloorMs: 0 });
  });

  it('gives back at close only what is still the budget', async () => {
    const { holdings, returned } = table();
    holdings.get('valid', policy, 0).renew(4, 0, 0, 1_000);
    holdings.get('ended', policy, 0).renew(4, 0, 0, 100);
    await holdings.giveBackAll(500);
    expect(returned.map((request) => request.key)).toEqual(['rl:{valid}']);
  });

  it("gives back a token bucket's units when its lease ends, a window's never after", () => {
    const { holdings, returned } = table();
    holdings.renew(holdings.get('k', bucket, 0), 4, 0, 0, 100);
    holdings.renew(holdings.get('k', policy, 0), 4, 0, 0, 100);
    expect(holdings.get('k', policy, 100).units).toBe(0);
    expect(returned.map((request) => [request.policy.algorithm, request.units])).toEqual([
      ['token-bucket', 4],
    ]);
  });

  it('gives back units a request had reserved across the end once it restores them, once', () => {
    const { holdings, clock, units } = table();
    const holding = holdings.get('k', bucket, 0);
    holdings.renew(holding, 5, 0, 0, 100);
    const inFlight = holding.take(2);
    clock.now = 100;
    holdings.get('other', bucket, 100); // the end is seen
    expect(units()).toBe(3);
    holdings.restore(inFlight);
    expect(units()).toBe(5);
    expect(holding.units).toBe(0);
  });

  it('restores units of a replaced lease: to the bucket, to the same window, else nowhere', () => {
    const { holdings, units } = table();
    const tokens = holdings.get('k', bucket, 0);
    holdings.renew(tokens, 5, 0, 0, 100);
    const fromBucket = tokens.take(2);
    tokens.take(3); // towards a request that takes the next lease
    holdings.renew(tokens, 5, 0, 10, 100);
    holdings.restore(fromBucket);
    expect([tokens.units, units()]).toEqual([5, 2]);

    const counted = holdings.get('k', policy, 0);
    holdings.renew(counted, 5, 7, 0, 1_000);
    const sameWindow = counted.take(2);
    const endedWindow = counted.take(3);
    holdings.renew(counted, 5, 7, 10, 1_000);
    holdings.restore(sameWindow);
    expect(counted.units).toBe(7);
    counted.take(7);
    holdings.renew(counted, 5, 8, 20, 1_000);
    holdings.restore(endedWindow);
    expect([counted.units, units()]).toEqual([5, 2]);
  });

  it('keeps units restored while the next lease is being taken', () => {
    const { holdings, units } = table();
    const tokens = holdings.get('k', bucket, 0);
    holdings.renew(tokens, 5, 0, 0, 100);
    const denied = tokens.take(5);
    holdings.restore(denied); // back before the next lease's grant
    holdings.renew(tokens, 4, 0, 10, 100);
    expect([tokens.units, units()]).toEqual([4, 5]);

    const counted = holdings.get('k', policy, 0);
    holdings.renew(counted, 5, 7, 0, 1_000);
    holdings.restore(counted.take(5));
    holdings.renew(counted, 4, 7, 10, 1_000);
    expect(counted.units).toBe(9);
  });

  it('restores nothing that a reset dropped', () => {
    const { holdings, units } = table();
    const tokens = holdings.get('k', bucket, 0);
    holdings.renew(tokens, 5, 0, 0, 100);
    const inFlight = tokens.take(2);
    holdings.forget('k', [bucket]);
    holdings.restore(inFlight);
    expect([tokens.units, units()]).toEqual([0, 0]);
  });

  it('waits for the ends on a real-time clock, and gives nothing back twice after close', async () => {
    const { holdings, returned, units } = table(true);
    const now = Date.now();
    holdings.renew(holdings.get('a', bucket, now), 3, 0, now, 40);
    holdings.renew(holdings.get('b', bucket, now), 2, 0, now, 20);
    holdings.renew(holdings.get('c', bucket, now), 1, 0, now, 200);
    while (units() < 5) await sleep(10);
    expect(returned.map((request) => request.key)).toEqual(['rl:{b}', 'rl:{a}']);
    await holdings.giveBackAll(Date.now());
    expect(units()).toBe(6);
    await sleep(250);
    expect(units()).toBe(6);
  });
});
