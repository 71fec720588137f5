import { WindowOpening } from '../../../lib/stores/redis/window-opening.js';
import type { StoreDecision } from '../../../lib/interfaces/rate-limit-store.interface.js';
import { LimiterFixture } from '../../support/limiters.js';
import { useRedisServer } from '../../support/redis-fixture.js';

/**
 * Which opening a lone fixed window's route sends (lua/fixed-window-first.lua): written
 * first once most of its recent decisions found their key new in its window, charged first
 * otherwise. Both answer alike (script-shortcuts.spec.ts); what this holds is that a route
 * gets the opening that costs it least, which Redis's own command counts show.
 */
const redis = useRedisServer();

const admitted = (remaining: number): StoreDecision => ({
  allowed: true,
  verdicts: [{ allowed: true, remaining, resetMs: 1_000, retryAfterMs: 0, delayMs: 0 }],
});

describe('window opening', () => {
  it('writes first after more new keys than present ones, up to a memory of 32', () => {
    const opening = new WindowOpening<string>();
    const fresh = admitted(9);
    const present = admitted(5);
    for (let i = 0; i < 16; i++) opening.saw(fresh, 10, 1);
    expect(opening.writesFirst).toBe(false);
    opening.saw(fresh, 10, 1);
    expect(opening.writesFirst).toBe(true);
    for (let i = 0; i < 100; i++) opening.saw(fresh, 10, 1);
    // Saturated at 32: 16 present ones bring it back to charging first.
    for (let i = 0; i < 15; i++) opening.saw(present, 10, 1);
    expect(opening.writesFirst).toBe(true);
    opening.saw(present, 10, 1);
    expect(opening.writesFirst).toBe(false);
    for (let i = 0; i < 100; i++) opening.saw(present, 10, 1);
    // And at 0: 17 new ones write first again.
    for (let i = 0; i < 17; i++) opening.saw(fresh, 10, 1);
    expect(opening.writesFirst).toBe(true);
  });

  it('counts a denial, and a stale decision, as a key present', () => {
    const opening = new WindowOpening<string>();
    for (let i = 0; i < 17; i++) opening.saw(admitted(9), 10, 1);
    opening.saw({ allowed: false, verdicts: [], stale: true }, 10, 1);
    expect(opening.writesFirst).toBe(false);
  });

  describe('on Redis', () => {
    let fixture: LimiterFixture;
    beforeAll(async () => {
      fixture = await new LimiterFixture('redis', redis.server.url, { denyCache: false }).ready();
    });
    afterAll(() => fixture.close());

    /** How many times Redis ran each of these commands since the last call (scripts' own included). */
    let seen = [0, 0];
    const since = async () => {
      const stats = (await redis.admin.info('commandstats')).split('\n');
      const now = ['set', 'incrby'].map((command) => {
        const line = stats.find((l) => l.startsWith(`cmdstat_${command}:`));
        return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
      });
      const delta = now.map((n, i) => n - seen[i]);
      seen = now;
      return { set: delta[0], incrby: delta[1] };
    };

    it('writes new clients first and charges returning ones first', async () => {
      const policy = { algorithm: 'fixed-window' as const, limit: 1_000, window: '1h' };
      await since();
      // New clients: charged first (INCRBY, then SET) until 17 found their key new.
      for (let i = 0; i < 40; i++) await fixture.limiter.consume(`new-${i}`, policy);
      expect(await since()).toEqual({ set: 40, incrby: 17 });
      // A returning client: written first (SET NX GET, then INCRBY) until 16 found it present.
      for (let i = 0; i < 40; i++) await fixture.limiter.consume('returning', policy);
      expect(await since()).toEqual({ set: 17, incrby: 39 });
      for (let i = 0; i < 10; i++) await fixture.limiter.consume('returning', policy);
      expect(await since()).toEqual({ set: 0, incrby: 10 });
    });
  });
});
