import { hashSlot } from '../../../lib/stores/redis/hash-slot.js';
import { useRedisServer } from '../../support/redis-fixture.js';
import { seededRandom } from '../../support/seeded-random.js';

/** Any UTF-16 text: ASCII, braces, the multi-byte planes and lone surrogates alike. */
function randomText(random: () => number): string {
  const length = Math.floor(random() * 40);
  const pick = (): string => {
    const kind = random();
    if (kind < 0.6) return String.fromCharCode(32 + Math.floor(random() * 95));
    if (kind < 0.9) return String.fromCharCode(Math.floor(random() * 0xd800));
    return String.fromCodePoint(0x10000 + Math.floor(random() * 0xfffff));
  };
  return Array.from({ length }, pick).join('');
}

describe('hashSlot', () => {
  // CLUSTER KEYSLOT needs cluster mode, not a cluster: one node with no slots answers it.
  const redis = useRedisServer({ extraArgs: ['--cluster-enabled', 'yes'] });

  it('answers what CLUSTER KEYSLOT answers, for 2,000 random texts', async () => {
    const random = seededRandom(19);
    const texts = [
      '',
      '123456789',
      'rl',
      ...Array.from({ length: 2_000 }, () => randomText(random)),
    ];
    const expected = await Promise.all(texts.map((text) => redis.admin.cluster('KEYSLOT', text)));
    // Redis hashes the tag of a key with one; hashSlot is given the hashed part alone.
    const tagless = texts
      .map((text, i) => [text, expected[i]] as const)
      .filter(([text]) => !/\{[^}]/.test(text));
    expect(tagless.length).toBeGreaterThan(1_000);
    for (const [text, slot] of tagless) expect([text, hashSlot(text)]).toEqual([text, slot]);
    // The reference value of Redis' CRC16 (XMODEM) for "123456789" is 0x31C3.
    expect(hashSlot('123456789')).toBe(0x31c3 % 16_384);
  });
});
