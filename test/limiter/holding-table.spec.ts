import type { GiveBackRequest } from '../../lib/interfaces/rate-limit-store.interface.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';
import { HoldingTable } from '../../lib/limiter/holding-table.js';

/** The bounded table of what a pod holds: sweeping idle clients, evicting past its bound. */
const [policy] = resolvePolicies(
  [{ algorithm: 'fixed-window', limit: 100, window: 1_000, lease: 10 }],
  {
    label: 'test',
    defaultScope: 'global',
  },
);

function table() {
  const returned: GiveBackRequest[] = [];
  const holdings = new HoldingTable(
    async (request) => {
      returned.push(request);
      return request.units;
    },
    (clientKey) => `rl:{${clientKey}}`,
    0,
    { now: () => 0, appClock: true, realTime: false },
  );
  return { holdings, returned };
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
});
