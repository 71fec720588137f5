import { createHash } from 'node:crypto';
import type { ExecutionContext } from '@nestjs/common';
import { isIPv6 } from 'node:net';

/** Client keys kept readable in Redis; anything else is hashed. No '{', '}' or '#' can pass. */
const READABLE_KEY = /^[A-Za-z0-9._:@/=+-]{1,64}$/;

/**
 * The hash tag that holds every key of one client's decision. Readable keys stay as they
 * are; others (braces, newlines, unicode, 10 kB strings) become '#' and a SHA-256, so no
 * input can break out of the tag, grow a key without bound, or pose as another client's
 * hashed form ('#' never appears in a readable key).
 */
export function clientTag(key: string): string {
  if (READABLE_KEY.test(key)) return key;
  return '#' + createHash('sha256').update(key).digest('base64url');
}

/** The full Redis key of one policy: `prefix:{client}:policy:algorithm[:route]`. */
export function policyKey(prefix: string, tag: string, keySuffix: string): string {
  return `${prefix}:{${tag}}${keySuffix}`;
}

/**
 * IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses are keyed by their /64, since one
 * client usually holds a whole /64 and could otherwise rotate through addresses freely.
 */
export function normalizeIp(ip: string): string {
  if (ip.startsWith('::ffff:') && ip.includes('.')) return ip.slice(7);
  if (!isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups = ip.includes('::')
    ? [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  const network = groups.slice(0, 4).map((group) => parseInt(group, 16).toString(16));
  return `${network.join(':')}::/64`;
}

/** The default `keyBy`: the client IP as the HTTP adapter resolves it under its trust-proxy setting. */
export function clientIp(context: ExecutionContext): string {
  const request = context
    .switchToHttp()
    .getRequest<{ ip?: string; socket?: { remoteAddress?: string } }>();
  return normalizeIp(request.ip ?? request.socket?.remoteAddress ?? 'unknown');
}
