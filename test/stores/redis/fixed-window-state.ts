/** What the integer form of a fixed window's state counts in (lua/fixed-window.lua). */
const LOW = 2 ** 20;

/**
 * A fixed window key's state (lua/fixed-window.lua) as [window index, count], from either
 * form: 'index:count', or the integer count * 2^20 + index % 2^20, whose index is completed
 * as the one nearest `nearIndex` with those low bits.
 */
export function fixedWindowState(state: string, nearIndex: number): [number, number] {
  if (state.includes(':')) {
    const [index, count] = state.split(':').map(Number);
    return [index, count];
  }
  const n = Number(state);
  const low = n % LOW;
  return [low + LOW * Math.round((nearIndex - low) / LOW), (n - low) / LOW];
}

/** The integer form of `count` in window `index`, as the consume prelude's scripts write it. */
export const integerState = (index: number, count: number): string =>
  String(count * LOW + (index % LOW));
