import type { ResolvedPolicy } from '../../interfaces/resolved-policy.interface.js';
import type {
  DecideRequest,
  LeaseTerms,
  PolicyVerdict,
  StoreDecision,
} from '../../interfaces/rate-limit-store.interface.js';
import { STALE_DECISION } from '../../interfaces/rate-limit-store.interface.js';
import { commonFor, type ScriptVariant, stepName, takesBurst, variantFor } from './lua-script.js';
import { LUA_SOURCES } from './lua-sources.generated.js';

/** Values per policy in a leased reply (lua/lease.lua), after `admitted`. */
const LEASE_REPLY_STRIDE = 8;

/**
 * The script that decides a leased request (lua/lease.lua) for these policies' algorithms:
 * the general prelude, what it needs of common.lua, each algorithm's step once, the binding
 * (the table of steps by policy, the reply and what the check read, at their full size),
 * then the entry; a lone policy's takes lua/lease-one.lua, without the tables, unless
 * `tables` asks for lease.lua (its test holds the two alike). Leases are taken once per
 * many admissions, so its values travel as arguments: one script per combination of
 * algorithms.
 */
export function composeLeaseScript(
  policies: readonly Pick<ResolvedPolicy, 'algorithm'>[],
  variant: ScriptVariant,
  tables = policies.length > 1,
): string {
  const algorithms = policies.map((policy) => policy.algorithm);
  const files = [...new Set(algorithms)].map((algorithm) => LUA_SOURCES[algorithm]);
  // As in decide's scripts: only the consume prelude's keys expire at their window's end.
  if (algorithms.includes('fixed-window')) {
    files.unshift(`local exact_expiry = ${variant === 'consume'}`);
  }
  const zeros = (count: number) => Array<number>(count).fill(0).join(', ');
  const leading = `local leading = ${LEADING_ARGS[variant]}`;
  const binding = tables
    ? [
        `local steps = { ${algorithms.map(stepName).join(', ')} }`,
        leading,
        `local reply, values = { 1, ${zeros(8 * policies.length)} }, { ${zeros(8 * policies.length)} }`,
      ]
    : [`local step = ${stepName(algorithms[0])}`, leading];
  const rest = [...files, binding.join('\n'), LUA_SOURCES[tables ? 'lease' : 'lease-one']];
  const prelude = LUA_SOURCES[variant === 'consume' ? 'prelude-consume' : 'prelude'];
  return [prelude, commonFor(rest), ...rest].join('\n');
}

/** ARGV values before the policies' (see the preludes). */
const LEADING_ARGS: Record<ScriptVariant, number> = { consume: 1, general: 4 };

/** The variant of a leased request's script: the consume prelude's common case, or general. */
export const leaseVariant = (request: DecideRequest): ScriptVariant =>
  variantFor(request, request.mode);

/** The id of composeLeaseScript's script for these policies in this variant. */
export const leaseScriptId = (policies: readonly ResolvedPolicy[], variant: ScriptVariant) =>
  `${variant}:${policies.map((policy) => policy.algorithm).join(',')}`;

/** EVAL's keys and arguments for a leased request (see lua/lease.lua), appended to `args`. */
export function leaseArguments(
  request: DecideRequest,
  terms: LeaseTerms,
  variant: ScriptVariant,
  args: (string | number)[],
): (string | number)[] {
  const { keys, policies, costs } = request;
  args.push(keys.length, ...keys);
  if (variant === 'consume') args.push(wantedUntil(request));
  else args.push(request.mode, request.now ?? '', request.ttlFloorMs, wantedUntil(request));
  for (let i = 0; i < policies.length; i++) {
    const { algorithm, scriptArgs } = policies[i];
    args.push(scriptArgs[0], scriptArgs[1], takesBurst(algorithm) ? scriptArgs[2] : '');
    args.push(costs[i], terms.sizes[i], terms.held[i], terms.heldWindows[i]);
  }
  return args;
}

const wantedUntil = ({ wantedUntil }: DecideRequest): string =>
  wantedUntil === undefined ? '' : String(Math.floor(wantedUntil));

/** The decision in a leased reply: verdicts as decide's, and what was leased. */
export function parseLeaseReply(reply: (number | string)[]): StoreDecision {
  if (reply.length === 0) return STALE_DECISION;
  const count = (reply.length - 1) / LEASE_REPLY_STRIDE;
  const verdicts = new Array<PolicyVerdict>(count);
  const units = new Array<number>(count);
  const windows = new Array<number>(count);
  const endsInMs = new Array<number>(count);
  for (let i = 0; i < count; i++) {
    const at = 1 + LEASE_REPLY_STRIDE * i;
    verdicts[i] = {
      allowed: reply[at] === 1,
      remaining: Number(reply[at + 1]),
      resetMs: Number(reply[at + 2]),
      retryAfterMs: Number(reply[at + 3]),
      delayMs: Number(reply[at + 4]),
    };
    units[i] = Number(reply[at + 5]);
    windows[i] = Number(reply[at + 6]);
    endsInMs[i] = Number(reply[at + 7]);
  }
  const allowed = reply[0] === 1;
  return allowed
    ? { allowed, verdicts, leased: { units, windows, endsInMs } }
    : { allowed, verdicts };
}
