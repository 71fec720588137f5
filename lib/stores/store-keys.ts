import { createHash } from 'node:crypto';

/** Client keys kept readable in Redis; anything else is hashed. No '{', '}' or '#' can pass. */
const READABLE_KEY = /^[A-Za-z0-9._:@/=+-]{1,64}$/;

/** A surrogate code unit not part of a pair: text with no UTF-8 form. */
const LONE_SURROGATE = /\p{Cs}/u;
/** Never a byte of UTF-8: what precedes a key hashed by its UTF-16 code units instead. */
const UTF16_MARK = Buffer.of(0xff);

/**
 * The hash tag that holds every key of one client's decision. Readable keys stay as they
 * are; others (braces, newlines, unicode, 10 kB strings) become '#' and a SHA-256, so no
 * input can break out of the tag, grow a key without bound, or pose as another client's
 * hashed form ('#' never appears in a readable key). A key with a lone surrogate (from a
 * JSON "\ud800" escape, say) has no UTF-8 form: UTF-8 would turn every such code unit
 * into U+FFFD and distinct keys into one client, so those hash by their code units.
 */
export function clientTag(key: string): string {
  if (READABLE_KEY.test(key)) return key;
  const hash = createHash('sha256');
  if (LONE_SURROGATE.test(key)) hash.update(UTF16_MARK).update(key, 'utf16le');
  else hash.update(key);
  return '#' + hash.digest('base64url');
}

/** The full Redis key of one policy: `prefix:{client}:policy:algorithm[:route]`. */
export function policyKey(prefix: string, tag: string, keySuffix: string): string {
  return `${prefix}:{${tag}}${keySuffix}`;
}

/** A policy's block key (lua/block.lua, both stores): its key and this, in the same hash tag. */
export const BLOCK_KEY_SUFFIX = ':block';
