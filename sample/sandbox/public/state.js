// @ts-check
// What the page knows at any moment, shared by its parts.

/** @import { Algorithm } from '../../../lib/index.js' */
/** @import { SandboxConfig } from '../sandbox.controller.js' */
/** @import { SimulationRun, Traffic } from '../simulation.js' */

/** @typedef {Algorithm | 'comparison' | 'pods' | 'live'} View */

/**
 * Where one drawn lane put its marks, for clicks, keys and the selection outline.
 * @typedef {object} LaneLayout
 * @property {{ x: number; y: number; height: number }[]} positions one per request
 * @property {SVGGElement} selectionLayer
 * @property {number} top
 * @property {number} bottom
 */

/**
 * @type {{
 *   config: SandboxConfig | null;
 *   view: View;
 *   run: SimulationRun | null;
 *   selection: { algorithm: Algorithm | null; index: number | null };
 *   latestRun: number;
 *   lastPattern: Traffic['pattern'] | null;
 *   layouts: Map<Algorithm, LaneLayout>;
 * }}
 */
export const state = {
  /** What the server told the page about itself, once it has. */
  config: null,
  view: 'comparison',
  /** The last simulation the server returned. */
  run: null,
  /** The clicked request: which lane, and its index in the (shared) traffic. */
  selection: { algorithm: null, index: null },
  /** Numbers runs so that a slow, superseded response never overwrites a newer one. */
  latestRun: 0,
  /** The traffic pattern last asked for, replayed when a setting changes. */
  lastPattern: null,
  /** Per drawn lane: where each mark is. */
  layouts: new Map(),
};

/** The server's configuration; nothing is drawn before the page has loaded it. */
export function config() {
  if (!state.config) throw new Error('The sandbox configuration has not loaded yet');
  return state.config;
}
