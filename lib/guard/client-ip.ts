import type { ExecutionContext } from '@nestjs/common';
import { isIPv6 } from 'node:net';
import { clientAddress } from './transports.js';
import { DEFAULT_IPV6_SUBNET } from '../config/ipv6-subnet.js';

/**
 * IPv4-mapped IPv6 becomes IPv4; other IPv6 addresses are keyed by their leading
 * `ipv6Subnet` bits, since one client usually holds a whole prefix and could otherwise
 * rotate through its addresses freely. The key is the prefix's groups in hex (the last one
 * masked), then `::` unless all eight groups are shown, then the prefix length:
 * `2001:db8:abcd::/48`, `2001:db8:8000::/33`, `2001:db8:0:0:0:0:0:1/128`.
 */
export function normalizeIp(ip: string, ipv6Subnet = DEFAULT_IPV6_SUBNET): string {
  if (!isIPv6(ip)) return ip;
  const groups = ipv6Groups(ip);
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  const shown = Math.ceil(ipv6Subnet / 16);
  const network = groups.slice(0, shown);
  const partialBits = ipv6Subnet % 16;
  if (partialBits > 0) network[shown - 1] &= (0xffff << (16 - partialBits)) & 0xffff;
  const hex = network.map((group) => group.toString(16)).join(':');
  return `${hex}${shown < 8 ? '::' : ''}/${ipv6Subnet}`;
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
 * 'unknown' where the transport has no client address (a broker, say). An IPv6 client is
 * its /64, or its `ipv6Subnet` given here (a `keyBy` of the app's own that falls back to
 * `clientIp` passes the module's `ipv6Subnet` if it sets one).
 */
export function clientIp(context: ExecutionContext, ipv6Subnet = DEFAULT_IPV6_SUBNET): string {
  return normalizeIp(clientAddress(context) ?? 'unknown', ipv6Subnet);
}
