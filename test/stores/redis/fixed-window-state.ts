/** What the integer form of a fixed window's state keeps the window's low bits above (lua/fixed-window.lua). */
const COUNT = 2 ** 33;
const LOW = 2 ** 20;

/**
 * A fixed window key's state (lua/fixed-window.lua) as [window index, count], from either
 * form: 'index:count', or the integer index % 2^20 * 2^33 + count, whose index is completed
 * as the one nearest `nearIndex` with those low bits.
 */
export function fixedWindowState(state: string, nearIndex: number): [number, number] {
  if (state.includes(':')) {
    const [index, count] = state.split(':').map(Number);
    return [index, count];
  }
  const n = Number(state);
  const count = n % COUNT;
  const low = (n - count) / COUNT;
  return [low + LOW * Math.round((nearIndex - low) / LOW), count];
}

/** The integer form of `count` in window `index`, as the consume prelude's scripts write it. */
export const integerState = (index: number, count: number): string =>
  String((index % LOW) * COUNT + count);
