import { BLOCK_KEY_SUFFIX } from '../store-keys.js';
import type { Algorithm } from '../../interfaces/rate-limit-policy.interface.js';
import { LUA_SOURCES } from './lua-sources.generated.js';
import type { DecideRequest, DecisionMode } from '../../interfaces/rate-limit-store.interface.js';
import type { ResolvedPolicy } from '../../interfaces/resolved-policy.interface.js';

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
export const takesBurst = (algorithm: Algorithm) => algorithm.endsWith('-bucket');

/** The Lua function that lua/<algorithm>.lua defines. */
export const stepName = (algorithm: Algorithm) => algorithm.replaceAll('-', '_');

/**
 * What a route's script holds as Lua literals rather than reading from ARGV: 'none'; its
 * policies' limit, window, burst and block ('values'); those and the request's costs
 * ('all', when they are the policies' own). Policies are resolved once, so a route's values
 * are fixed and its script is too: each value written in spares Redis an argument and its
 * conversion on every call (bench:decide: about a tenth of Redis's CPU per decision).
 */
export type InlinedValues = 'none' | 'values' | 'all';

/** What composing needs of a policy. */
export type ScriptPolicy = Pick<ResolvedPolicy, 'algorithm' | 'blockMs' | 'scriptArgs'>;

/**
 * The script for one route's policies, in one variant: the prelude, lua/common.lua, each
 * algorithm's file once, the binding of the policies to their steps with their values
 * (literals or ARGV, see InlinedValues), and the entry. Only what the route needs is defined on each
 * call, and a single policy takes the entry without tables (its binding: locals `step`,
 * `limit`, `window`, `burst`, `cost`; several: `policy(i, charge, a, b)` running policy i's
 * step, and the tables decide.lua fills, at their full size). Policies with a block
 * duration get their step wrapped by lua/block.lua; only their scripts contain it.
 * `costs` are read only when `inlined` is 'all'.
 */
export function composeDecideScript(
  policies: readonly ScriptPolicy[],
  variant: ScriptVariant = 'general',
  inlined: InlinedValues = 'none',
  costs: readonly number[] = [],
  writtenFirst = false,
): string {
  const algorithms = policies.map((policy) => policy.algorithm);
  const files = [...new Set(algorithms)].map((algorithm) => LUA_SOURCES[algorithm]);
  const blocking = policies.some((policy) => policy.blockMs > 0);
  if (blocking) files.push(LUA_SOURCES.block);
  let at = LEADING_ARGS[variant];
  let blockKey = policies.length;
  // The same order as scriptArguments sends what is not written in.
  const argument = () => `ARGV[${++at}] + 0`;
  const value = (literal: string) => (inlined === 'none' ? argument() : literal);
  // A lone fixed window without a block, consumed on Redis TIME, is decided before any
  // function is made (lua/fixed-window-first.lua), on its values bound ahead of it.
  let decidedFirst = '';
  const bindings = policies.map(({ algorithm, scriptArgs, blockMs }, i) => {
    const limit = value(scriptArgs[0]);
    const window = value(scriptArgs[1]);
    const burst = takesBurst(algorithm) ? value(scriptArgs[2]) : 'nil';
    const cost = inlined === 'all' ? String(costs[i]) : argument();
    if (variant === 'consume' && isLoneFixedWindow(policies)) {
      // The charge in the integer form's units, formatted once.
      const costText =
        inlined === 'all' ? `'${costs[i] * 2 ** 20}'` : `string.format('%d', (${cost}) * 1048576)`;
      decidedFirst = [
        `local limit, window, cost = ${limit}, ${window}, ${cost}`,
        `local cost_text, written_first = ${costText}, ${writtenFirst}`,
        LUA_SOURCES['fixed-window-first'],
      ].join('\n');
    }
    const values = `${limit}, ${window}, ${burst}, ${cost}`;
    const step =
      blockMs > 0
        ? `with_block(${stepName(algorithm)}, KEYS[${++blockKey}], ${value(String(blockMs))})`
        : stepName(algorithm);
    return { step, values };
  });
  // Only the consume prelude's keys expire at their window's end in Redis time (lua/fixed-window.lua).
  if (algorithms.includes('fixed-window')) {
    files.unshift(`local exact_expiry = ${variant === 'consume'}`);
  }
  const prelude = LUA_SOURCES[PRELUDES[variant]];
  if (bindings.length === 1) {
    // Plain locals for decide-one.lua: no function to create and call on each decision.
    const [{ step, values }] = bindings;
    const rest = [
      ...files,
      `local step, limit, window, burst, cost = ${step}, ${values}`,
      LUA_SOURCES['decide-one'],
    ];
    return [prelude, decidedFirst, commonFor(rest), ...rest].filter(Boolean).join('\n');
  }
  const calls = bindings.map(
    ({ step, values }, i) => `return ${step}(KEYS[${i + 1}], now, ${values}, charge, a, b)`,
  );
  const last = calls.pop()!;
  const slots = (count: number) => Array<number>(count).fill(0).join(', ');
  const binding = [
    'local function policy(i, charge, a, b)',
    ...calls.map((call, i) => `  if i == ${i + 1} then ${call} end`),
    `  ${last}`,
    'end',
    `local reply, read = { 1, ${slots(bindings.length * 4)} }, { ${slots(bindings.length * 2)} }`,
  ].join('\n');
  const rest = [...files, binding, LUA_SOURCES.decide];
  return [prelude, commonFor(rest), ...rest].join('\n');
}

/** A route of one fixed window without a block: the one lua/fixed-window-first.lua decides. */
export const isLoneFixedWindow = (policies: readonly ScriptPolicy[]): boolean =>
  policies.length === 1 && policies[0].algorithm === 'fixed-window' && !policies[0].blockMs;

/**
 * lua/common.lua in paragraphs (blank-line separated): its opening, then each helper with its
 * comment. A `local function` is created anew on every call of a script, so a script holds
 * only the helpers it calls.
 */
const COMMON = LUA_SOURCES.common.split('\n\n');
const COMMON_HELPERS = COMMON.flatMap((text) => {
  const name = /^local function (\w+)/m.exec(text)?.[1];
  return name ? [{ text, call: new RegExp(`\\b${name}\\(`) }] : [];
});
const COMMON_OPENING = COMMON.filter((text) => !/^local function /m.test(text));

/** What a script of `rest` needs of lua/common.lua (its helpers call none of each other). */
export function commonFor(rest: readonly string[]): string {
  const text = rest.join('\n');
  const used = COMMON_HELPERS.filter(({ call }) => call.test(text));
  return [...COMMON_OPENING, ...used.map((helper) => helper.text)].join('\n\n');
}

/** The variant that decides `request` in `mode` (the request's own, or the Cluster path's). */
export const variantFor = (request: DecideRequest, mode: ScriptMode): ScriptVariant =>
  mode === 'consume' && request.now === undefined && request.ttlFloorMs === 0
    ? 'consume'
    : 'general';

/**
 * Whether `request`'s costs are its policies' own (a number each, not a function's answer,
 * nor a cost the caller gave): then a script may hold them as literals (InlinedValues 'all').
 */
export function costsAreStatic(request: DecideRequest): boolean {
  const { policies, costs } = request;
  for (let i = 0; i < policies.length; i++) if (costs[i] !== policies[i].cost) return false;
  return true;
}

/**
 * The script's keys and arguments for `request`, in the layout the preludes describe: the
 * policies' keys, then the block keys of those with a block duration; the variant's leading
 * values, then per policy what the script does not hold (see InlinedValues): limit, window, burst
 * (buckets only), cost and block (if any). EVAL takes `keyCount(request.policies)` of them
 * as keys. Appended to `args`, which are returned.
 */
export function scriptArguments(
  request: DecideRequest,
  mode: ScriptMode,
  variant: ScriptVariant,
  inlined: InlinedValues = 'none',
  args: (string | number)[] = [],
): (string | number)[] {
  const { keys, policies, costs } = request;
  for (let i = 0; i < keys.length; i++) args.push(keys[i]);
  for (let i = 0; i < policies.length; i++) {
    if (policies[i].blockMs > 0) args.push(keys[i] + BLOCK_KEY_SUFFIX);
  }
  const wantedUntil = wantedUntilArgument(request.wantedUntil);
  if (variant === 'consume') args.push(wantedUntil);
  else args.push(mode, request.now ?? '', request.ttlFloorMs, wantedUntil);
  if (inlined === 'all') return args;
  for (let i = 0; i < policies.length; i++) {
    const { algorithm, scriptArgs, blockMs } = policies[i];
    if (inlined === 'values') {
      args.push(costs[i]);
      continue;
    }
    args.push(scriptArgs[0], scriptArgs[1]);
    if (takesBurst(algorithm)) args.push(scriptArgs[2]);
    args.push(costs[i]);
    if (blockMs > 0) args.push(blockMs);
  }
  return args;
}

let lastWantedMs = NaN;
let lastWantedText = '';

/**
 * `wantedUntil` as sent: in whole ms, which changes no outcome (the scripts compare it with
 * Redis TIME in whole ms, and t > w iff t > floor(w) for a whole t) and spares both sides a
 * fraction's digits; the last one's text is kept, since the calls of one ms share it.
 */
function wantedUntilArgument(wantedUntil: number | undefined): string {
  if (wantedUntil === undefined) return '';
  const ms = Math.floor(wantedUntil);
  if (ms !== lastWantedMs) {
    lastWantedMs = ms;
    lastWantedText = String(ms);
  }
  return lastWantedText;
}

/** How many of the script's arguments are keys: one per policy, one per block. */
export function keyCount(policies: readonly ResolvedPolicy[]): number {
  let count = policies.length;
  for (let i = 0; i < policies.length; i++) if (policies[i].blockMs > 0) count++;
  return count;
}

/**
 * The script id of these policies as `inlined` holds them: their algorithms and which of them
 * block, and what the script holds as literals (values, and costs).
 */
export function scriptIdOf(
  policies: readonly ResolvedPolicy[],
  inlined: InlinedValues = 'none',
  costs: readonly number[] = [],
): string {
  return policies
    .map((p, i) => {
      let id = p.blockMs > 0 ? `${p.algorithm}+block` : p.algorithm;
      if (inlined !== 'none') id += `:${p.scriptArgs.join(':')}:${p.blockMs}`;
      if (inlined === 'all') id += `*${costs[i]}`;
      return id;
    })
    .join(',');
}
