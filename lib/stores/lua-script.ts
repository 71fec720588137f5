import { BLOCK_KEY_SUFFIX } from '../client-key.js';
import type { Algorithm } from '../rate-limit-policy.interface.js';
import type { ResolvedPolicy } from '../resolved-policy.js';
import { LUA_SOURCES } from './lua-sources.generated.js';
import type { DecideRequest, DecisionMode } from './rate-limit-store.interface.js';

/**
 * 'consume': charging on Redis TIME without a TTL floor, the common case, whose script reads
 * only `wantedUntil` before the policies' values (lua/prelude-consume.lua). 'general': peek,
 * or a caller's clock and TTL floor (lua/prelude.lua).
 */
export type ScriptVariant = 'consume' | 'general';

/**
 * What a script is asked: a request's mode, or 'check', the first phase of a Cluster
 * decision across slots, which denies and starts blocks as a consume would but charges
 * nothing (lua/prelude.lua).
 */
export type ScriptMode = DecisionMode | 'check';

/** ARGV values before the policies' (see the preludes). */
const LEADING_ARGS: Record<ScriptVariant, number> = { consume: 1, general: 4 };
const PRELUDES: Record<ScriptVariant, string> = { consume: 'prelude-consume', general: 'prelude' };

/** Only the buckets have a burst apart from the limit; the windows are sent none. */
const takesBurst = (algorithm: Algorithm) => algorithm.endsWith('-bucket');

/** The Lua function that lua/<algorithm>.lua defines. */
const stepName = (algorithm: Algorithm) => algorithm.replaceAll('-', '_');

/**
 * The script for one route's algorithms, policy by policy, in one variant: the prelude,
 * lua/num.lua, each algorithm's file once, the binding of the policies to their steps and
 * values, and the entry. Only what the route needs is defined on each call, and a single
 * policy takes the entry without tables (its binding: locals `step`, `limit`, `window`,
 * `burst`, `cost`; several: `policy(i, charge, a, b)` running policy i's step, and the
 * tables decide.lua fills, at their full size). Policies with a block duration (`blocking[i]`)
 * get their step wrapped by lua/block.lua; only their scripts contain it.
 */
export function composeDecideScript(
  algorithms: readonly Algorithm[],
  variant: ScriptVariant = 'general',
  blocking: readonly boolean[] = [],
): string {
  const files = [...new Set(algorithms)].map((algorithm) => LUA_SOURCES[algorithm]);
  if (blocking.includes(true)) files.push(LUA_SOURCES.block);
  let at = LEADING_ARGS[variant];
  let blockKey = algorithms.length;
  const value = () => `tonumber(ARGV[${++at}])`;
  const bindings = algorithms.map((algorithm, i) => {
    const limit = value();
    const window = value();
    const burst = takesBurst(algorithm) ? value() : 'nil';
    const values = `${limit}, ${window}, ${burst}, ${value()}`;
    const step = blocking[i]
      ? `with_block(${stepName(algorithm)}, KEYS[${++blockKey}], ${value()})`
      : stepName(algorithm);
    return { step, values };
  });
  let binding: string;
  if (bindings.length === 1) {
    // Plain locals for decide-one.lua: no function to create and call on each decision.
    const [{ step, values }] = bindings;
    binding = `local step, limit, window, burst, cost = ${step}, ${values}`;
  } else {
    const calls = bindings.map(
      ({ step, values }, i) => `return ${step}(KEYS[${i + 1}], now, ${values}, charge, a, b)`,
    );
    const last = calls.pop()!;
    const slots = (count: number) => Array<number>(count).fill(0).join(', ');
    binding = [
      'local function policy(i, charge, a, b)',
      ...calls.map((call, i) => `  if i == ${i + 1} then ${call} end`),
      `  ${last}`,
      'end',
      `local reply, read = { 1, ${slots(bindings.length * 5)} }, { ${slots(bindings.length * 2)} }`,
    ].join('\n');
  }
  const entry = algorithms.length === 1 ? LUA_SOURCES['decide-one'] : LUA_SOURCES.decide;
  return [LUA_SOURCES[PRELUDES[variant]], LUA_SOURCES.num, ...files, binding, entry].join('\n');
}

/** The variant that decides `request` in `mode` (the request's own, or the Cluster path's). */
export const variantFor = (request: DecideRequest, mode: ScriptMode): ScriptVariant =>
  mode === 'consume' && request.now === undefined && request.ttlFloorMs === 0
    ? 'consume'
    : 'general';

/**
 * The script's keys and arguments for `request`, in the layout the preludes describe: the
 * policies' keys, then the block keys of those with a block duration; the variant's leading
 * values, then per policy limit, window, burst (buckets only), cost and block (if any).
 * EVAL takes `keyCount(request.policies)` of them as keys.
 */
export function scriptArguments(
  request: DecideRequest,
  mode: ScriptMode,
  variant: ScriptVariant,
): (string | number)[] {
  const { keys, policies, costs } = request;
  const args: (string | number)[] = [...keys];
  for (let i = 0; i < policies.length; i++) {
    if (policies[i].blockMs > 0) args.push(keys[i] + BLOCK_KEY_SUFFIX);
  }
  if (variant === 'consume') args.push(request.wantedUntil ?? '');
  else args.push(mode, request.now ?? '', request.ttlFloorMs, request.wantedUntil ?? '');
  for (let i = 0; i < policies.length; i++) {
    const { algorithm, scriptArgs, blockMs } = policies[i];
    args.push(scriptArgs[0], scriptArgs[1]);
    if (takesBurst(algorithm)) args.push(scriptArgs[2]);
    args.push(costs[i]);
    if (blockMs > 0) args.push(blockMs);
  }
  return args;
}

/** How many of the script's arguments are keys: one per policy, one per block. */
export function keyCount(policies: readonly ResolvedPolicy[]): number {
  let count = policies.length;
  for (let i = 0; i < policies.length; i++) if (policies[i].blockMs > 0) count++;
  return count;
}

/** The script id of these policies: their algorithms, and which of them block. */
export function scriptIdOf(policies: readonly ResolvedPolicy[]): string {
  if (policies.length === 1) {
    const [{ algorithm, blockMs }] = policies;
    return blockMs > 0 ? `${algorithm}+block` : algorithm;
  }
  return policies.map((p) => (p.blockMs > 0 ? `${p.algorithm}+block` : p.algorithm)).join(',');
}
