// @ts-check
// What the page says about each algorithm and each view.

/** @import { Algorithm } from '../../../lib/index.js' */
/** @import { View } from './state.js' */

/** @type {Readonly<Record<Algorithm, string>>} */
export const NAMES = {
  'sliding-window-log': 'Sliding Window Log',
  'sliding-window-counter': 'Sliding Window Counter',
  'token-bucket': 'Token Bucket',
  'leaky-bucket': 'Leaky Bucket',
  'fixed-window': 'Fixed Window',
};

/** @type {Readonly<Record<Exclude<View, 'live' | 'pods'>, string>>} */
export const ABOUT = {
  'sliding-window-log':
    'Remembers when each admitted request happened and admits a new one only if fewer than ' +
    '"limit" were admitted during the last window. Exact: no boundary effect, no smoothing.',
  'sliding-window-counter':
    'Keeps two counters: the current fixed window, and the previous one weighted by how much ' +
    'of it the sliding window still covers. Nearly as exact as the log at the cost of two numbers.',
  'token-bucket':
    'A bucket holding up to "burst" tokens, refilled at "limit" per window; every request ' +
    'takes a token. A full bucket lets a burst through at once, then the refill rate rules.',
  'leaky-bucket':
    'A queue drained at "limit" per window. A request waits its turn (the guard delays it) ' +
    'and is denied only when "burst" requests are already waiting: the output is perfectly ' +
    'even. Its busiest 2 s counts requests when they proceed, not when they arrive.',
  'fixed-window':
    'Counts requests per window aligned to the clock and starts again at every boundary. ' +
    'Cheap, but a full quota just before a boundary and another just after it all get through: ' +
    'try the boundary-burst exploit.',
  comparison:
    'The same traffic through all five algorithms at once, each decided by the library on its ' +
    'own virtual clock and its own fresh key.',
};

/**
 * What a policy's `remaining` counts: requests, tokens or queue space.
 * @param {Algorithm} algorithm
 */
export function remainingLabel(algorithm) {
  if (algorithm === 'token-bucket') return 'tokens left';
  if (algorithm === 'leaky-bucket') return 'queue space left';
  return 'remaining';
}

/** The views that can run the boundary-burst exploit. */
export const EXPLOIT_VIEWS = new Set(['fixed-window', 'comparison']);
/** Algorithms whose windows are aligned to the clock, so their boundaries are worth drawing. */
export const ALIGNED_WINDOWS = new Set(['fixed-window', 'sliding-window-counter']);
