/** The `ipv6Subnet` option's default: one client usually holds a whole /64. */
export const DEFAULT_IPV6_SUBNET = 64;

/**
 * A prefix length that can make one client: from 32 (a small ISP's or a whole site's
 * allocation) to 128 (one address).
 */
export const isIpv6Subnet = (value: unknown): value is number =>
  Number.isSafeInteger(value) && (value as number) >= 32 && (value as number) <= 128;
