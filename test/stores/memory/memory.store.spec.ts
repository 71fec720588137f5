import type { RateLimitPolicy } from '../../../lib/interfaces/rate-limit-policy.interface.js';
import { resolvePolicies } from '../../../lib/config/resolved-policy.js';
import { MemoryStore } from '../../../lib/stores/memory/memory.store.js';
import type { DecisionMode } from '../../../lib/interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../../../lib/interfaces/resolved-policy.interface.js';

const consume = (store: MemoryStore, key: string, now: number | undefined, ttlFloorMs = 0) =>
  store.decide({
    mode: 'consume',
    keys: [key],
    policies: resolvePolicies([{ algorithm: 'fixed-window', limit: 1, window: '1h' }], {
      label: 'test',
      defaultScope: 'global',
    }),
    costs: [1],
    now,
    ttlFloorMs,
  });

describe('MemoryStore sweep', () => {
  it('expires entries in real time, so a virtual clock running ahead cannot wipe live budgets', async () => {
    const store = new MemoryStore(10);
    try {
      expect((await consume(store, 'live', undefined)).allowed).toBe(true);
      // A simulation a day ahead on the same store, then a few sweeps.
      await consume(store, 'simulated', Date.now() + 86_400_000, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await consume(store, 'live', undefined)).allowed).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('drops entries whose need has passed', async () => {
    const store = new MemoryStore(10);
    try {
      const shortLived = resolvePolicies([{ algorithm: 'fixed-window', limit: 1, window: 20 }], {
        label: 'test',
        defaultScope: 'global',
      });
      await store.decide({
        mode: 'consume',
        keys: ['k'],
        policies: shortLived,
        costs: [1],
        now: undefined,
        ttlFloorMs: 0,
      });
      await new Promise((resolve) => setTimeout(resolve, 80));
      expect((store as unknown as { entries: Map<string, unknown> }).entries.size).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('MemoryStore', () => {
  const request = (wantedUntil?: number) => ({
    mode: 'consume' as const,
    keys: ['k'],
    policies: resolvePolicies([{ algorithm: 'fixed-window', limit: 1, window: '1h' }], {
      label: 'test',
      defaultScope: 'global',
    }),
    costs: [1],
    now: undefined,
    ttlFloorMs: 0,
    wantedUntil,
  });

  it('answers stale, charging nothing, once the decision is no longer wanted', async () => {
    const store = new MemoryStore();
    try {
      expect(await store.decide(request(Date.now() - 1_000))).toEqual({
        allowed: false,
        verdicts: [],
        stale: true,
      });
      expect((await store.decide(request(Date.now() + 60_000))).allowed).toBe(true);
      expect((await store.decide(request())).allowed).toBe(false);
    } finally {
      await store.close();
    }
  });

  it('still decides at the very millisecond until which the decision is wanted', async () => {
    const realNow = Date.now;
    const store = new MemoryStore();
    try {
      Date.now = () => 1_700_000_000_000;
      expect((await store.decide(request(1_700_000_000_000))).allowed).toBe(true);
    } finally {
      Date.now = realNow;
      await store.close();
    }
  });

  it('sweeps an entry at the very millisecond it expires', async () => {
    const realNow = Date.now;
    const store = new MemoryStore(5);
    const entries = (store as unknown as { entries: Map<string, { expiresAt: number }> }).entries;
    try {
      await store.decide(request());
      const expiresAt = entries.get('k')!.expiresAt;
      Date.now = () => expiresAt;
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(entries.size).toBe(0);
    } finally {
      Date.now = realNow;
      await store.close();
    }
  });

  it('forgets every budget when closed', async () => {
    const store = new MemoryStore();
    expect((await store.decide(request())).allowed).toBe(true);
    await store.close();
    expect((await store.decide(request())).allowed).toBe(true);
    await store.close();
  });
});

describe('MemoryStore block duration', () => {
  // A virtual decision clock at the start of a minute: every window here starts at T.
  const T = 1_699_999_980_000;
  const policies = (...list: RateLimitPolicy[]) =>
    resolvePolicies(list, { label: 'test', defaultScope: 'global' });
  const decide = (
    store: MemoryStore,
    route: ResolvedPolicy[],
    now: number,
    { mode = 'consume' as DecisionMode, ttlFloorMs = 0 } = {},
  ) =>
    store.decide({
      mode,
      keys: route.map((policy) => `k:${policy.name}`),
      policies: route,
      costs: route.map(() => 1),
      now,
      ttlFloorMs,
    });
  /** A route of one fixed-window policy with a block. */
  const blocking = (limit: number, window: number, blockDuration: number) =>
    policies({ algorithm: 'fixed-window', limit, window, blockDuration });
  let store: MemoryStore;
  beforeEach(() => {
    store = new MemoryStore();
  });
  afterEach(() => store.close());

  it('denies from the denial that starts it to its end, charging nothing, then decides as before', async () => {
    const route = blocking(2, 1_000, 3_000);
    expect((await decide(store, route, T)).allowed).toBe(true);
    expect((await decide(store, route, T)).allowed).toBe(true);
    // The window would allow again at T + 1000; the block holds to T + 100 + 3000.
    expect(await decide(store, route, T + 100)).toEqual({
      allowed: false,
      verdicts: [{ allowed: false, remaining: 0, resetMs: 3_000, retryAfterMs: 3_000, delayMs: 0 }],
    });
    expect((await decide(store, route, T + 2_000)).verdicts).toEqual([
      { allowed: false, remaining: 0, resetMs: 1_100, retryAfterMs: 1_100, delayMs: 0 },
    ]);
    expect((await decide(store, route, T + 3_099)).verdicts[0].retryAfterMs).toBe(1);
    // Nothing charged during the block: the whole budget at its end.
    expect((await decide(store, route, T + 3_100)).verdicts[0]).toMatchObject({
      allowed: true,
      remaining: 1,
    });
  });

  it("reports the policy's own reset and retry when they outlast the block", async () => {
    const route = blocking(1, 60_000, 1_000);
    await decide(store, route, T);
    expect((await decide(store, route, T + 1)).verdicts[0]).toMatchObject({
      allowed: false,
      resetMs: 59_999,
      retryAfterMs: 59_999,
    });
    expect((await decide(store, route, T + 500)).verdicts[0]).toMatchObject({
      allowed: false,
      resetMs: 59_500,
      retryAfterMs: 59_500,
    });
  });

  it('starts a block on a denial in a consume only, and on the denying policy only', async () => {
    const shape = { algorithm: 'fixed-window', window: 1_000, blockDuration: 10_000 } as const;
    const route = policies(
      { ...shape, name: 'wide', limit: 5 },
      { ...shape, name: 'narrow', limit: 1 },
    );
    await decide(store, route, T);
    // A peek denied by 'narrow' starts nothing.
    expect((await decide(store, route, T + 1, { mode: 'peek' })).allowed).toBe(false);
    expect((await decide(store, route, T + 1_000)).allowed).toBe(true);
    // A consume denied by 'narrow' blocks 'narrow', not 'wide', which admitted it.
    expect((await decide(store, route, T + 1_001)).verdicts.map((v) => v.allowed)).toEqual([
      true,
      false,
    ]);
    const [wide, narrow] = route;
    expect((await decide(store, [wide], T + 2_000)).allowed).toBe(true);
    expect((await decide(store, [narrow], T + 2_000)).verdicts[0]).toMatchObject({
      allowed: false,
      retryAfterMs: 9_001,
    });
    // A peek during the block is denied by it too.
    expect((await decide(store, [narrow], T + 2_000, { mode: 'peek' })).verdicts[0]).toMatchObject({
      allowed: false,
      retryAfterMs: 9_001,
    });
  });

  it('is lifted by a reset of the policy key', async () => {
    const route = blocking(1, 1_000, 10_000);
    await decide(store, route, T);
    expect((await decide(store, route, T + 1)).allowed).toBe(false);
    await store.reset(route.map((policy) => `k:${policy.name}`));
    expect((await decide(store, route, T + 2)).allowed).toBe(true);
  });

  it('expires in real time its whole duration after it starts, rounded up, or the ttl floor if longer', async () => {
    const realNow = Date.now;
    const R = realNow();
    // The policy's own state (10 ms) expires long before the block's key.
    const route = blocking(1, 10, 100.5);
    const blockedAtRealTime = async (elapsed: number, ttlFloorMs = 0) => {
      Date.now = () => R;
      const fresh = new MemoryStore();
      try {
        await decide(fresh, route, T, { ttlFloorMs });
        await decide(fresh, route, T + 1, { ttlFloorMs });
        Date.now = () => R + elapsed;
        // The decisions' clock stands still, inside the block: only its key's expiry ends it.
        return !(await decide(fresh, route, T + 1)).allowed;
      } finally {
        Date.now = realNow;
        await fresh.close();
      }
    };
    expect([await blockedAtRealTime(101), await blockedAtRealTime(102)]).toEqual([true, false]);
    expect([await blockedAtRealTime(500, 500), await blockedAtRealTime(501, 500)]).toEqual([
      true,
      false,
    ]);
  });
});
