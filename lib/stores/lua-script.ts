import type { Algorithm } from '../rate-limit-policy.interface.js';
import { LUA_SOURCES } from './lua-sources.generated.js';

/** The Lua function that lua/<algorithm>.lua defines. */
const stepName = (algorithm: Algorithm) => algorithm.replaceAll('-', '_');

/**
 * The script for one route's algorithms, policy by policy: the prelude, each algorithm's
 * file once, the binding of each policy to its step, and the entry. Only what the route
 * needs is defined on each call, and a single policy takes the entry without tables.
 */
export function composeDecideScript(algorithms: readonly Algorithm[]): string {
  const files = [...new Set(algorithms)].map((algorithm) => LUA_SOURCES[algorithm]);
  const [binding, entry] =
    algorithms.length === 1
      ? [`local step = ${stepName(algorithms[0])}`, LUA_SOURCES['decide-one']]
      : [`local steps = { ${algorithms.map(stepName).join(', ')} }`, LUA_SOURCES.decide];
  return [LUA_SOURCES.prelude, ...files, binding, entry].join('\n');
}
