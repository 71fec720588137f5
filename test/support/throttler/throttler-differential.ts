/**
 * RedisThrottlerStorage against @nestjs/throttler's own in-memory storage, over random traces
 * on one virtual clock (test/throttler/differential.spec.ts runs it, built, in a process of its
 * own: throttler is CommonJS requiring the ESM @nestjs/common, which Jest cannot load).
 * Prints `{ steps, blocked, mismatches }` as JSON, mismatches being the first few answers that
 * differ in any field.
 *
 * The traces mix throttlers with and without a block, a ttl that changes between calls (a
 * resolvable ttl), several hits in one ms, long pauses, a limit of 0, a fractional ttl, and
 * one key shared by several throttler names (a generateKey that leaves the name out), whose
 * window and block throttler keeps per key.
 *
 * The memory storage sweeps idle records once a minute; the script treats a record as gone
 * as soon as it is idle. SWEEP=always (the default) sweeps the memory storage before every
 * call, and then every field is equal. SWEEP=never does not sweep at all (a record that went
 * idle stays), and then the fields throttler's guard reads are equal (totalHits, timeToExpire,
 * isBlocked, and timeToBlockExpire when blocked) for every limit of at least 1: when the sweep
 * runs changes only timeToBlockExpire of an answer that is not blocked (ceil((0 - now) / 1000)
 * for a fresh record, or counted from an old block), and, for a limit of 0, whether a stale
 * block's end admits the next hit.
 */
import { ThrottlerStorageService } from '@nestjs/throttler';
import { Redis } from 'ioredis';
import { RedisThrottlerStorage } from '../../../lib/throttler/index.js';
import { seededRandom } from '../seeded-random.js';

interface Throttler {
  readonly name: string;
  readonly ttl: number;
  readonly limit: number;
  readonly blockDuration: number;
}

const THROTTLERS: readonly Throttler[] = [
  { name: 'short', ttl: 1_000, limit: 3, blockDuration: 1_000 },
  { name: 'medium', ttl: 10_000, limit: 5, blockDuration: 0 },
  { name: 'long', ttl: 4_000, limit: 2, blockDuration: 6_500 },
  { name: 'fraction', ttl: 750.5, limit: 1, blockDuration: 0 },
  { name: 'zero', ttl: 2_000, limit: 0, blockDuration: 300 },
];
const KEYS = ['a', 'b', 'shared'];
/** Epoch ms the traces start at. */
const T0 = 1_800_000_000_000;

/** What the memory storage's sweep timer calls (private in its types). */
type Sweepable = { evictIdleRecords(now: number): void };

type StorageRecord = Awaited<ReturnType<ThrottlerStorageService['increment']>>;

/** -0 (JS's Math.ceil of a small negative) as 0: Redis replies carry integers. */
const normalized = (record: StorageRecord): StorageRecord => ({
  totalHits: record.totalHits + 0,
  timeToExpire: record.timeToExpire + 0,
  isBlocked: record.isBlocked,
  timeToBlockExpire: record.timeToBlockExpire + 0,
});

const redisUrl = process.env.REDIS_URL!;
const seeds = (process.env.SEEDS ?? '1').split(',').map(Number);
const stepsPerSeed = Number(process.env.STEPS ?? 1_000);
const sweep = process.env.SWEEP !== 'never';
const throttlers = THROTTLERS.filter(({ limit }) => sweep || limit >= 1);
/** What is compared: every field, or what the guard reads. */
const compared = (record: StorageRecord) =>
  JSON.stringify(
    sweep
      ? record
      : [
          record.totalHits,
          record.timeToExpire,
          record.isBlocked,
          record.isBlocked ? record.timeToBlockExpire : 0,
        ],
  );

let now = T0;
Date.now = () => now;
const storage = new RedisThrottlerStorage(redisUrl, { clock: () => now, prefix: 'diff' });
await storage.onModuleInit();
const admin = new Redis(redisUrl);
const mismatches: unknown[] = [];
let steps = 0;
let blocked = 0;
for (const seed of seeds) {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const memory = new ThrottlerStorageService();
  await admin.flushall();
  now = T0 + seed * 1_000_000;
  for (let step = 0; step < stepsPerSeed && mismatches.length < 5; step++) {
    const roll = random();
    now +=
      roll < 0.3
        ? 0
        : roll < 0.95
          ? Math.floor(random() * 400)
          : 2_000 + Math.floor(random() * 9_000);
    const throttler = pick(throttlers);
    const keyName = pick(KEYS);
    // A key per name, as the guard's generateKey makes them, but for 'shared'.
    const key = keyName === 'shared' ? keyName : `${keyName}-${throttler.name}`;
    const ttl = random() < 0.1 ? throttler.ttl + Math.floor(random() * 3_000) : throttler.ttl;
    const args = [key, ttl, throttler.limit, throttler.blockDuration, throttler.name] as const;
    if (sweep) (memory as unknown as Sweepable).evictIdleRecords(now);
    const expected = normalized(await memory.increment(...args));
    const actual = await storage.increment(...args);
    steps++;
    if (expected.isBlocked) blocked++;
    if (compared(actual) !== compared(expected)) {
      mismatches.push({ seed, step, now: now - T0, args, expected, actual });
    }
  }
  memory.onApplicationShutdown();
}
admin.disconnect();
await storage.onApplicationShutdown();
console.log(JSON.stringify({ steps, blocked, mismatches }));
