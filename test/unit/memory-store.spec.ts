import { resolvePolicies } from '../../lib/resolved-policy.js';
import { MemoryStore } from '../../lib/stores/memory.store.js';

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
