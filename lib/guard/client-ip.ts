import type { ExecutionContext } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { clientAddress } from './transports.js';

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
