import { clientTag, policyKey } from '../stores/store-keys.js';

/** The Redis keys of one increment, in one hash tag, and the name's part of them. */
export interface ThrottlerKeys {
  /** The throttler key's record: its window, its block, its names' latest hits. */
  readonly record: string;
  /** This name's hits under that key. */
  readonly hits: string;
  /** The name as the record's fields and the hits' key hold it. */
  readonly name: string;
}

/**
 * `prefix:{key}:throttler` and `prefix:{key}:throttler:name`. The throttler key (the guard's
 * SHA-256 by default, or whatever a `generateKey` returns) makes the tag as a client key does
 * in RateLimitModule, so user text never breaks out of it; the name is bounded the same way.
 */
export function throttlerKeys(prefix: string, key: string, throttlerName: string): ThrottlerKeys {
  const record = policyKey(prefix, clientTag(key), ':throttler');
  const name = clientTag(throttlerName);
  return { record, hits: `${record}:${name}`, name };
}
