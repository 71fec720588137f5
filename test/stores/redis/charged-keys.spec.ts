import { ChargedKeys } from '../../../lib/stores/redis/charged-keys.js';
import { LimiterFixture } from '../../support/limiters.js';
import { useRedisServer } from '../../support/redis-fixture.js';

/**
 * Which opening a lone fixed window's script takes (lua/fixed-window-first.lua): written
 * first for a key this store has not seen in its window, charged first for one it has.
 * Both answer alike (script-shortcuts.spec.ts); what this holds is that each key gets the
 * opening that costs it least, which Redis's own command counts show.
 */
const redis = useRedisServer();

describe('charged keys', () => {
  it('knows a key until the window end its reply named, then forgets it', () => {
    let now = 1_000;
    const keys = new ChargedKeys(() => now);
    expect(keys.has('a')).toBe(false);
    keys.note('a', 250);
    expect(keys.has('a')).toBe(true);
    now += 249;
    expect(keys.has('a')).toBe(true);
    now += 1;
    expect(keys.has('a')).toBe(false);
    keys.note('a', 10);
    expect(keys.has('a')).toBe(true);
  });

  it('keeps the last 10,000 to 20,000 keys noted', () => {
    const keys = new ChargedKeys(() => 0);
    for (let i = 0; i < 20_000; i++) keys.note(`k${i}`, 1_000);
    expect(keys.has('k0')).toBe(true);
    keys.note('k20000', 1_000);
    expect(keys.has('k0')).toBe(false);
    expect(keys.has('k9999')).toBe(false);
    expect(keys.has('k10000')).toBe(true);
    expect(keys.has('k20000')).toBe(true);
  });

  describe('on Redis', () => {
    let fixture: LimiterFixture;
    beforeAll(async () => {
      fixture = await new LimiterFixture('redis', redis.server.url, { denyCache: false }).ready();
    });
    afterAll(() => fixture.close());

    /** How many times Redis ran each of these commands (scripts' own calls included). */
    const calls = async (...commands: string[]) => {
      const stats = (await redis.admin.info('commandstats')).split('\n');
      return commands.map((command) => {
        const line = stats.find((l) => l.startsWith(`cmdstat_${command}:`));
        return Number(/calls=(\d+)/.exec(line ?? '')?.[1] ?? 0);
      });
    };

    it('writes a new key first and charges a key it saw first', async () => {
      const policy = { algorithm: 'fixed-window' as const, limit: 3, window: '1h' };
      const before = await calls('set', 'incrby', 'get');
      await fixture.limiter.consume('new-client', policy);
      const afterFirst = await calls('set', 'incrby', 'get');
      expect(afterFirst.map((n, i) => n - before[i])).toEqual([1, 0, 0]);
      for (let i = 0; i < 3; i++) await fixture.limiter.consume('new-client', policy);
      const afterMore = await calls('set', 'incrby', 'get', 'decrby');
      // Two admitted and one denied, each a single INCRBY (the denial's taken back by DECRBY).
      expect(afterMore.slice(0, 3).map((n, i) => n - afterFirst[i])).toEqual([0, 3, 0]);
    });

    it('answers a key another store charged as that store would (one call more)', async () => {
      const policy = { algorithm: 'fixed-window' as const, limit: 2, window: '1h' };
      const other = await new LimiterFixture('redis', redis.server.url, {
        denyCache: false,
      }).ready();
      try {
        const first = await other.limiter.consume('shared-client', policy);
        const second = await fixture.limiter.consume('shared-client', policy);
        const third = await fixture.limiter.consume('shared-client', policy);
        expect([first.allowed, second.allowed, third.allowed]).toEqual([true, true, false]);
        expect([first, second, third].map((d) => d.results[0].remaining)).toEqual([1, 0, 0]);
      } finally {
        await other.close();
      }
    });
  });
});
