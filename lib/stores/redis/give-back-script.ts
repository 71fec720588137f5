import type {
  GiveBackRequest,
  RefundRequest,
} from '../../interfaces/rate-limit-store.interface.js';
import { commonFor } from './lua-script.js';
import { LUA_SOURCES } from './lua-sources.generated.js';

/**
 * A script that gives units back (lua/give-back.lua) through `entry`: the general prelude,
 * what it needs of common.lua, the give-back function, the entry.
 */
function composeGiveBackScript(entry: 'lease-return' | 'refund'): string {
  const rest = [LUA_SOURCES['give-back'], LUA_SOURCES[entry]];
  return [LUA_SOURCES.prelude, commonFor(rest), ...rest].join('\n');
}

/** A pod's unused leased units back to one policy (lua/lease-return.lua). */
export const LEASE_RETURN_SCRIPT = composeGiveBackScript('lease-return');

/** A request's charge back to its policies (lua/refund.lua). */
export const REFUND_SCRIPT = composeGiveBackScript('refund');

/** The general prelude's leading values: mode (unread), now, ttl floor, no wanted-until. */
const leading = (now: number | undefined, ttlFloorMs: number) => [
  'consume',
  now ?? '',
  ttlFloorMs,
  '',
];

/** EVAL's keys and arguments for a give-back (see lua/lease-return.lua). */
export function giveBackArguments(request: GiveBackRequest): (string | number)[] {
  const { policy } = request;
  return [
    1,
    request.key,
    ...leading(request.now, request.ttlFloorMs),
    policy.algorithm,
    policy.scriptArgs[0],
    policy.scriptArgs[1],
    policy.scriptArgs[2],
    request.units,
    request.window,
  ];
}

/** EVAL's keys and arguments for a refund (see lua/refund.lua). */
export function refundArguments(request: RefundRequest): (string | number)[] {
  const { keys, policies, units, chargedAt } = request;
  const args: (string | number)[] = [
    keys.length,
    ...keys,
    ...leading(request.now, request.ttlFloorMs),
  ];
  for (let i = 0; i < policies.length; i++) {
    const { algorithm, scriptArgs } = policies[i];
    args.push(algorithm, scriptArgs[0], scriptArgs[1], scriptArgs[2], units[i], chargedAt[i] ?? '');
  }
  return args;
}
