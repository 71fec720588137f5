import { createHash } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { clientAddress } from '../guard/transports.js';

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

/**
 * IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses are keyed by their /64, since one
 * client usually holds a whole /64 and could otherwise rotate through addresses freely.
 */
export function normalizeIp(ip: string): string {
  if (!isIPv6(ip)) return ip;
  const groups = ipv6Groups(ip);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  const network = groups.slice(0, 4).map((group) => group.toString(16));
  return `${network.join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address: '::' expanded, a dotted IPv4 tail as two groups. */
function ipv6Groups(ip: string): number[] {
  const toGroups = (part: string) =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (!group.includes('.')) return [parseInt(group, 16)];
          const [a, b, c, d] = group.split('.').map(Number);
          return [(a << 8) | b, (c << 8) | d];
        });
  const [head, tail] = ip.toLowerCase().split('%')[0].split('::');
  const headGroups = toGroups(head);
  if (tail === undefined) return headGroups;
  const tailGroups = toGroups(tail);
  const zeros = Array<number>(8 - headGroups.length - tailGroups.length).fill(0);
  return [...headGroups, ...zeros, ...tailGroups];
}

/**
 * The default `keyBy`: the client IP as the HTTP adapter resolves it under its trust-proxy
 * setting (for HTTP and GraphQL), else the peer address of the WebSocket or TCP socket;
 * 'unknown' where the transport has no client address (a broker, say).
 */
export function clientIp(context: ExecutionContext): string {
  return normalizeIp(clientAddress(context) ?? 'unknown');
}
