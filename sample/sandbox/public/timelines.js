// @ts-check
// Timelines: every request of a run as a mark against time, one lane per algorithm.

import { ALIGNED_WINDOWS, NAMES, remainingLabel } from './algorithms.js';
import { renderDetails } from './details.js';
import { byId, element, seconds, svgElement } from './dom.js';
import { config, state } from './state.js';

/** @import { Algorithm } from '../../../lib/index.js' */
/** @import { AlgorithmRun, SimulationRun } from '../simulation.js' */
/** @import { LaneLayout } from './state.js' */

/** Requests closer than one column on screen stack up in it, earliest at the bottom. */
const COLUMN_PX = 5;
const MAX_ROW_PX = 12;
const BAND_LABEL_PX = 11;
const TICK_STEPS_MS = [100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3];

/** @typedef {(ms: number) => number} Scale from ms into the run to x in pixels */

const lanesElement = byId('lanes', HTMLElement);

/** @returns {AlgorithmRun[]} the runs the current view shows */
function visibleRuns() {
  if (!state.run) return [];
  const { algorithms } = state.run;
  return state.view === 'comparison'
    ? algorithms
    : algorithms.filter((run) => run.algorithm === state.view);
}

export function renderLanes() {
  state.layouts.clear();
  lanesElement.replaceChildren();
  const runs = visibleRuns();
  if (!state.run || runs.length === 0) {
    lanesElement.append(element('p', { class: 'hint' }, 'Run some traffic to see the decisions.'));
    return;
  }
  const compact = runs.length > 1;
  for (const run of runs) {
    const timeline = element('div', {
      class: 'timeline',
      tabindex: '0',
      role: 'group',
      'aria-label': `${NAMES[run.algorithm]} timeline: arrow keys select a request`,
    });
    lanesElement.append(
      element(
        'article',
        { class: 'lane', 'data-lane': run.algorithm },
        laneHeader(state.run, run),
        timeline,
      ),
    );
    drawTimeline(timeline, state.run, run, compact ? 104 : 220);
  }
}

/**
 * @param {string} name
 * @param {string} label
 * @param {number} value
 * @param {string} [extraClass]
 */
function stat(name, label, value, extraClass = '') {
  return element(
    'div',
    { class: `stat ${name} ${extraClass}` },
    element('dt', {}, label),
    element('dd', { 'data-stat': name }, String(value)),
  );
}

/**
 * @param {SimulationRun} simulation
 * @param {AlgorithmRun} run
 */
function laneHeader({ limit, windowMs }, run) {
  const busiest = run.busiestSpan.admitted;
  // What the policy means to allow in that span: its limit, once per window the span touches.
  const spanQuota = limit * Math.max(1, Math.ceil(config().busiestSpanMs / windowMs));
  const overQuota = busiest > spanQuota;
  const busiestStat = stat('busiest', 'Max admitted in any 2 s', busiest, overQuota ? 'over' : '');
  if (overQuota) {
    const times = Number((busiest / spanQuota).toFixed(2));
    busiestStat.append(element('span', { class: 'note' }, ` (${times}× the quota)`));
  }
  const login = state.run?.traffic.pattern === 'login';
  const stats = element(
    'dl',
    { class: 'stats' },
    stat('admitted', 'Admitted', run.admitted),
    login
      ? stat('failed', 'Failures counted', run.admitted - run.refunded)
      : stat('delayed', 'Delayed', run.delayed),
    ...(login ? [stat('refunded', 'Given back', run.refunded)] : []),
    stat('denied', 'Denied', run.denied),
    busiestStat,
  );
  return element('header', {}, element('h2', {}, NAMES[run.algorithm]), stats);
}

/**
 * The time axis spans the arrivals, so the traffic fills the width; delays reaching beyond it
 * are cut at the edge. Traffic arriving at one instant is shown until the last delayed request
 * proceeds instead, so that the leaky bucket's queue can be seen draining.
 * @param {SimulationRun} simulation
 */
function timeAxisSpan(simulation) {
  const lastArrivalMs = simulation.algorithms[0].requests.at(-1)?.atMs ?? 0;
  if (lastArrivalMs > 0) return lastArrivalMs * 1.05 + 100;
  return Math.max(simulation.endMs, 1000) * 1.03;
}

/**
 * Draws one algorithm's decisions against time, at the container's current width.
 * @param {HTMLElement} container
 * @param {SimulationRun} simulation
 * @param {AlgorithmRun} run
 * @param {number} height
 */
function drawTimeline(container, simulation, run, height) {
  const { windowBoundariesMs, limit, burst } = simulation;
  const width = Math.max(container.clientWidth, 200);
  const margin = { left: 6, right: 6, top: 6 };
  const plotWidth = width - margin.left - margin.right;
  const axisTop = height - 18;
  const bandHeight = Math.round(height * 0.24);
  const bandTop = axisTop - 4 - bandHeight;
  const marksBottom = bandTop - 5;
  const domainMs = timeAxisSpan(simulation);
  /** @type {Scale} */
  const x = (ms) => margin.left + (ms / domainMs) * plotWidth;
  const plotEnd = margin.left + plotWidth;

  const svg = svgElement('svg', {
    width,
    height,
    viewBox: `0 0 ${width} ${height}`,
    role: 'img',
    'aria-label': `${run.admitted} admitted, ${run.delayed} of them delayed, ${run.denied} denied`,
  });

  // Stack requests that fall into the same column, earliest at the bottom.
  /** @type {Map<number, number>} */
  const stackHeights = new Map();
  const cells = run.requests.map((request) => {
    const column = Math.floor((x(request.atMs) - margin.left) / COLUMN_PX);
    const row = stackHeights.get(column) ?? 0;
    stackHeights.set(column, row + 1);
    return { column, row };
  });
  const tallestStack = Math.max(1, ...stackHeights.values());
  const rowHeight = Math.min(MAX_ROW_PX, (marksBottom - margin.top) / tallestStack);

  const busiest = run.busiestSpan;
  if (busiest.admitted > 0) {
    const left = x(busiest.fromMs);
    const right = Math.min(x(busiest.fromMs + config().busiestSpanMs), plotEnd);
    svg.append(
      svgElement('rect', {
        class: 'busiest',
        x: left,
        y: margin.top,
        width: Math.max(right - left, 2),
        height: marksBottom - margin.top,
      }),
    );
  }

  const boundarySpacing = x(simulation.windowMs) - x(0);
  if (ALIGNED_WINDOWS.has(run.algorithm) && boundarySpacing >= 6) {
    for (const atMs of windowBoundariesMs.filter((boundary) => boundary <= domainMs)) {
      svg.append(
        svgElement('line', {
          class: 'boundary',
          x1: x(atMs),
          x2: x(atMs),
          y1: margin.top,
          y2: bandTop + bandHeight,
        }),
      );
    }
  }

  const positions = run.requests.map((request, index) => {
    const { column, row } = cells[index];
    const markX = margin.left + column * COLUMN_PX;
    const markY = marksBottom - (row + 1) * rowHeight;
    const markHeight = Math.max(1, rowHeight > 3 ? rowHeight - 1 : rowHeight);
    if (request.outcome === 'delayed' && request.proceedsAtMs !== null) {
      const lineY = markY + markHeight / 2;
      svg.append(
        svgElement('line', {
          class: 'delay',
          x1: markX + COLUMN_PX - 1,
          x2: Math.min(x(request.proceedsAtMs), plotEnd),
          y1: lineY,
          y2: lineY,
        }),
      );
    }
    svg.append(
      svgElement('rect', {
        class: `mark ${request.outcome}`,
        'data-index': index,
        x: markX,
        y: markY,
        width: COLUMN_PX - 1,
        height: markHeight,
      }),
    );
    return { x: markX, y: markY, height: markHeight };
  });

  drawRemainingBand(svg, run, {
    x,
    top: bandTop,
    height: bandHeight,
    plotWidth,
    capacity: run.algorithm.endsWith('bucket') ? burst : limit,
  });
  drawAxis(svg, { x, top: axisTop, domainMs, plotWidth });

  const selectionLayer = svgElement('g', { class: 'selection' });
  svg.append(selectionLayer);
  container.replaceChildren(svg);
  state.layouts.set(run.algorithm, {
    positions,
    selectionLayer,
    top: margin.top,
    bottom: bandTop + bandHeight,
  });

  svg.addEventListener('click', (event) => {
    const bounds = svg.getBoundingClientRect();
    select(
      run.algorithm,
      nearestMark(positions, event.clientX - bounds.left, event.clientY - bounds.top),
    );
  });
  container.addEventListener('keydown', (event) => {
    const last = run.requests.length - 1;
    const current = state.selection.index;
    /** @type {Record<string, number>} */
    const targets = {
      ArrowRight: current === null ? 0 : Math.min(current + 1, last),
      ArrowLeft: current === null ? last : Math.max(current - 1, 0),
      Home: 0,
      End: last,
    };
    if (!(event.key in targets)) return;
    event.preventDefault();
    select(run.algorithm, targets[event.key]);
  });
  drawSelection(run.algorithm);
}

/**
 * The step line of what each decision reported as left: requests, tokens or queue space.
 * @param {SVGSVGElement} svg
 * @param {AlgorithmRun} run
 * @param {{ x: Scale; top: number; height: number; plotWidth: number; capacity: number }} band
 */
function drawRemainingBand(svg, run, { x, top, height, plotWidth, capacity }) {
  const scaleMax = Math.max(capacity, ...run.requests.map((request) => request.remaining));
  // The line keeps below the label's row, so the two never cross.
  const lineHeight = height - BAND_LABEL_PX;
  /** @param {number} value */
  const y = (value) => top + height - (value / scaleMax) * lineHeight;
  svg.append(svgElement('rect', { class: 'band', x: x(0), y: top, width: plotWidth, height }));
  let path = '';
  for (const request of run.requests) {
    path += path === '' ? `M${x(request.atMs)},${y(request.remaining)}` : ` H${x(request.atMs)}`;
    path += ` V${y(request.remaining)}`;
  }
  svg.append(svgElement('path', { class: 'remaining', d: path }));
  svg.append(
    svgElement(
      'text',
      { class: 'band-label', x: x(0) + 3, y: top + 9 },
      `${remainingLabel(run.algorithm)} (0–${scaleMax})`,
    ),
  );
}

/**
 * @param {SVGSVGElement} svg
 * @param {{ x: Scale; top: number; domainMs: number; plotWidth: number }} axis
 */
function drawAxis(svg, { x, top, domainMs, plotWidth }) {
  svg.append(svgElement('line', { class: 'axis', x1: x(0), x2: x(domainMs), y1: top, y2: top }));
  const maxTicks = Math.max(2, Math.floor(plotWidth / 70));
  const step = TICK_STEPS_MS.find((candidate) => domainMs / candidate <= maxTicks) ?? 3600e3;
  for (let atMs = 0; atMs <= domainMs; atMs += step) {
    svg.append(
      svgElement('line', { class: 'tick', x1: x(atMs), x2: x(atMs), y1: top, y2: top + 4 }),
    );
    svg.append(
      svgElement(
        'text',
        {
          class: 'tick-label',
          x: x(atMs),
          y: top + 15,
          'text-anchor': atMs === 0 ? 'start' : 'middle',
        },
        seconds(atMs),
      ),
    );
  }
}

/**
 * @param {LaneLayout['positions']} positions
 * @param {number} pointerX
 * @param {number} pointerY
 */
function nearestMark(positions, pointerX, pointerY) {
  let nearest = 0;
  let nearestDistance = Infinity;
  positions.forEach((position, index) => {
    // Horizontal distance dominates: a click anywhere above a column picks from that column.
    const distance =
      Math.abs(position.x + COLUMN_PX / 2 - pointerX) * 10 +
      Math.abs(position.y + position.height / 2 - pointerY);
    if (distance < nearestDistance) {
      nearest = index;
      nearestDistance = distance;
    }
  });
  return nearest;
}

/**
 * @param {Algorithm} algorithm
 * @param {number} index
 */
function select(algorithm, index) {
  state.selection = { algorithm, index };
  for (const drawn of state.layouts.keys()) drawSelection(drawn);
  renderDetails();
}

/**
 * Outlines the selected request in its lane and marks the same moment in the other lanes.
 * @param {Algorithm} algorithm
 */
function drawSelection(algorithm) {
  const layout = state.layouts.get(algorithm);
  if (!layout) return;
  const { index } = state.selection;
  layout.selectionLayer.replaceChildren();
  const position = index === null ? undefined : layout.positions[index];
  if (!position) return;
  const centerX = position.x + (COLUMN_PX - 1) / 2;
  layout.selectionLayer.append(
    svgElement('line', {
      class: 'cursor',
      x1: centerX,
      x2: centerX,
      y1: layout.top,
      y2: layout.bottom,
    }),
  );
  if (algorithm === state.selection.algorithm) {
    layout.selectionLayer.append(
      svgElement('rect', {
        class: 'selected',
        x: position.x - 2,
        y: position.y - 2,
        width: COLUMN_PX + 3,
        height: position.height + 4,
      }),
    );
  }
}

/**
 * Timelines are drawn in real pixels, so they are redrawn when their width changes (not their
 * height, which drawing itself changes).
 */
export function redrawOnResize() {
  let drawnWidth = 0;
  new ResizeObserver(([entry]) => {
    if (entry.contentRect.width === drawnWidth) return;
    drawnWidth = entry.contentRect.width;
    requestAnimationFrame(renderLanes);
  }).observe(lanesElement);
}
