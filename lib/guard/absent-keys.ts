import type { ExecutionContext, Logger } from '@nestjs/common';
import { clientIp } from './client-ip.js';
import type { ResolvedPolicy } from '../interfaces/resolved-policy.interface.js';
import { ThrottledLog } from '../observability/throttled-log.js';

/** Whether every policy has a key: none is `undefined`, `null` or `''`. */
export function allKeysPresent(keys: readonly (string | null | undefined)[]): keys is string[] {
  for (const key of keys) if (key === undefined || key === null || key === '') return false;
  return true;
}

/**
 * Keys a keyBy left absent, replaced by the client address. Keyed as the text
 * "undefined", every such request would share one budget: all users as one, silently. The
 * usual cause is guard order: a keyBy reading `req.user` runs in the global guard, before
 * the `@UseGuards` auth guard that sets it. Each route and policy warns on its own,
 * throttled like the other warnings.
 */
export class AbsentKeys {
  private readonly logs = new Map<string, ThrottledLog>();

  /** @param ipv6Subnet the leading bits of an IPv6 address that make one client */
  constructor(
    private readonly logger: Logger,
    private readonly ipv6Subnet: number,
  ) {}

  /**
   * `keys` with each absent one replaced by the client address.
   * @param route names the handler in the warning, e.g. `UsersController.find`
   */
  filled(
    context: ExecutionContext,
    route: string,
    policies: readonly ResolvedPolicy[],
    keys: readonly (string | null | undefined)[],
  ): string[] {
    let address: string | undefined;
    return keys.map((key, i) => {
      if (key !== undefined && key !== null && key !== '') return key;
      this.warn(route, policies[i].name, key);
      return (address ??= clientIp(context, this.ipv6Subnet));
    });
  }

  private warn(route: string, policy: string, key: null | undefined | ''): void {
    const id = `${route}\0${policy}`;
    let log = this.logs.get(id);
    if (!log) {
      log = new ThrottledLog(this.logger);
      this.logs.set(id, log);
    }
    log.warn(
      `keyBy gave ${JSON.stringify(key) ?? 'undefined'} for policy "${policy}" on ${route}: ` +
        'limited by the client address instead. A keyBy that reads req.user runs before an ' +
        'auth guard applied with @UseGuards, since the global RateLimitGuard runs first: ' +
        'register the auth guard as a global guard before RateLimitModule, or apply ' +
        '@UseGuards(AuthGuard, RateLimitGuard) to the route (docs/policies.md, "Keying by user").',
    );
  }
}
