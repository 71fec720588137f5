import { ALGORITHMS } from '../../../lib/index.js';
import { LimiterFixture } from '../../support/limiters.js';
import { useRedisServer } from '../../support/redis-fixture.js';
import { windowWithRoom } from '../../support/redis-server.js';

const CLIENTS = 1_000;
/** The timeout each test below is given (120_000 there): none runs longer. */
const TEST_MS = 120_000;

/** Readable IPs, and text that must be hashed: long, braces, control bytes, broken UTF-16. */
function clientKey(i: number): string {
  switch (i % 4) {
    case 0:
      return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    case 1:
      return `{tag-${i}}\r\n`.repeat(50);
    case 2:
      return `\uD800${i}\uDFFF\u0000`;
    default:
      return `user-${i}@example.com`;
  }
}

// Out here, not in the describe: its afterAll closes its client before this stops Redis.
const redis = useRedisServer();

/** A flood of distinct clients leaves one key per client and policy, each short and expiring. */
describe('a flood of distinct clients', () => {
  let fixture: LimiterFixture;
  beforeAll(async () => {
    // Thousands of decisions at once on a busy machine: the deadline is not under test here.
    fixture = await new LimiterFixture('redis', redis.server.url, { timeout: 30_000 }).ready();
  });
  afterAll(() => fixture?.close());

  it('gives every key it writes an expiry within its window, and writes nothing for a peek', async () => {
    const client = fixture.client!;
    const window = await windowWithRoom(client, TEST_MS);
    for (const algorithm of ALGORITHMS) {
      const policy = { name: 'flood', algorithm, limit: 2, window };
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, i) => {
          await fixture.limiter.peek(`peek-only-${i}`, policy);
          // Up to a denial, which writes nothing either.
          for (let n = 0; n < 3; n++) await fixture.limiter.consume(clientKey(i), policy);
        }),
      );
    }
    // SCAN may return a key twice while the keyspace rehashes.
    const seen = new Set<string>();
    for await (const keys of client.scanStream({ count: 1_000 }) as AsyncIterable<string[]>) {
      const ttls = await Promise.all(keys.map((key) => client.pttl(key)));
      keys.forEach((key, i) => {
        expect(Buffer.byteLength(key)).toBeLessThan(256);
        expect(ttls[i]).toBeGreaterThan(0);
        // A bucket holds its state for its refill time, a window for at most two windows.
        expect(ttls[i]).toBeLessThanOrEqual(2 * window);
      });
      for (const key of keys) seen.add(key);
    }
    expect(seen.size).toBe(CLIENTS * ALGORITHMS.length);
  }, 120_000);

  it("gives a block key the block as its expiry, in its policy key's hash tag", async () => {
    const client = fixture.client!;
    const BLOCK_MS = 30_000;
    const window = await windowWithRoom(client, TEST_MS);
    const blocked = CLIENTS / 10;
    for (const algorithm of ALGORITHMS) {
      const policy = {
        name: 'blocking',
        algorithm,
        limit: 2,
        window,
        blockDuration: BLOCK_MS,
      };
      await Promise.all(
        Array.from({ length: blocked }, async (_, i) => {
          // Two admitted, then a denial that starts the block, then one denied by the block.
          for (let n = 0; n < 4; n++) await fixture.limiter.consume(clientKey(i), policy);
        }),
      );
    }
    const blockKeys = new Set<string>();
    const stream = client.scanStream({ match: '*:blocking:*:block', count: 1_000 });
    for await (const keys of stream as AsyncIterable<string[]>) {
      for (const key of keys) blockKeys.add(key);
    }
    expect(blockKeys.size).toBe(blocked * ALGORITHMS.length);
    for (const key of blockKeys) {
      const policyKey = key.slice(0, -':block'.length);
      const [ttl, policyKeyTtl] = await Promise.all([client.pttl(key), client.pttl(policyKey)]);
      expect(Buffer.byteLength(key)).toBeLessThan(256);
      expect(ttl).toBeGreaterThan(0);
      // Set at the first denial for the block, not for the window (4 min or more).
      expect(ttl).toBeLessThanOrEqual(BLOCK_MS);
      // Beside the policy's own key: same prefix and hash tag, so the same Cluster slot. That
      // key outlives the test: its window has the test's timeout left, and the buckets and
      // logs hold their state for a window.
      expect(policyKeyTtl).toBeGreaterThan(0);
    }
  }, 120_000);
});
