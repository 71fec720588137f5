/* global clearInterval, performance, requestAnimationFrame, ResizeObserver, setInterval */
// The sandbox page. It draws what the server's simulation returns and never decides anything
// itself: every admitted, delayed or denied mark is a decision made by the library.

const NAMES = {
  'sliding-window-log': 'Sliding Window Log',
  'sliding-window-counter': 'Sliding Window Counter',
  'token-bucket': 'Token Bucket',
  'leaky-bucket': 'Leaky Bucket',
  'fixed-window': 'Fixed Window',
};

const ABOUT = {
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

/** What a policy's `remaining` counts, per algorithm. */
const REMAINING_LABEL = {
  'token-bucket': 'tokens left',
  'leaky-bucket': 'queue space left',
};

/** The views that can run the boundary-burst exploit. */
const EXPLOIT_VIEWS = new Set(['fixed-window', 'comparison']);
/** Algorithms whose windows are aligned to the clock, so their boundaries are worth drawing. */
const ALIGNED_WINDOWS = new Set(['fixed-window', 'sliding-window-counter']);
const STATUS_TEXT = { 200: 'OK', 429: 'Too Many Requests' };
const SVG_NS = 'http://www.w3.org/2000/svg';
/** Requests closer than one column on screen stack up in it, earliest at the bottom. */
const COLUMN_PX = 5;
const MAX_ROW_PX = 12;
const BAND_LABEL_PX = 11;

const byId = (id) => document.getElementById(id);
const lanesElement = byId('lanes');
const detailsElement = byId('details');
const runStatus = byId('run-status');

const state = {
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
  /** Per drawn lane: where each mark is, for clicks, keys and the selection outline. */
  layouts: new Map(),
};

// ---------------------------------------------------------------------------------------------
// Small helpers

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

function svgElement(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Milliseconds as seconds, with no more decimals than it needs. */
function seconds(ms) {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

function setRunStatus(text, isError = false) {
  runStatus.textContent = text;
  runStatus.classList.toggle('error', isError);
}

// ---------------------------------------------------------------------------------------------
// Tabs

const tabs = [...document.querySelectorAll('[role="tab"]')];

function showView(view) {
  state.view = view;
  for (const tab of tabs) {
    const selected = tab.dataset.view === view;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
  const live = view === 'live';
  byId('live').hidden = !live;
  byId('simulator').hidden = live;
  if (!live) stopAutoSend();
  if (live) return;
  byId('simulator').setAttribute('aria-labelledby', `tab-${view}`);
  byId('run-exploit').hidden = !EXPLOIT_VIEWS.has(view);
  byId('about').textContent = ABOUT[view];
  if (view !== 'comparison') state.selection.algorithm = view;
  renderLanes();
  renderDetails();
}

for (const tab of tabs) {
  tab.addEventListener('click', () => showView(tab.dataset.view));
  // Arrow keys move between tabs, as in the WAI-ARIA tabs pattern.
  tab.addEventListener('keydown', (event) => {
    const moves = { ArrowRight: 1, ArrowLeft: -1 };
    let next;
    if (event.key in moves) {
      next = (tabs.indexOf(tab) + moves[event.key] + tabs.length) % tabs.length;
    } else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = tabs.length - 1;
    else return;
    event.preventDefault();
    tabs[next].focus();
    showView(tabs[next].dataset.view);
  });
}

// ---------------------------------------------------------------------------------------------
// Running traffic through the library

function readSettings() {
  const number = (id) => (byId(id).value === '' ? null : Number(byId(id).value));
  const windowSeconds = number('window');
  return {
    limit: number('limit'),
    windowMs: windowSeconds === null ? null : Math.round(windowSeconds * 1000),
    burst: number('burst'),
    headerStyle: byId('header-style').value,
  };
}

function describeTraffic(run) {
  const { traffic, limit } = run;
  const count = run.algorithms[0].requests.length;
  if (traffic.pattern === 'steady') {
    return `${count} requests, ${traffic.ratePerSecond}/s for ${traffic.durationSeconds} s`;
  }
  if (traffic.pattern === 'burst') return `${count} requests at the same instant`;
  return `${limit} requests in the second before a window boundary, ${limit} in the second after`;
}

/** The traffic of a pattern; steady traffic takes its rate and duration from the form. */
function trafficFor(pattern) {
  if (pattern !== 'steady') return { pattern };
  return {
    pattern,
    ratePerSecond: Number(byId('rate').value),
    durationSeconds: Number(byId('duration').value),
  };
}

async function runTraffic(pattern) {
  state.lastPattern = pattern;
  const traffic = trafficFor(pattern);
  const runNumber = ++state.latestRun;
  setRunStatus('Simulating…');
  const started = performance.now();
  let response;
  let body;
  try {
    response = await fetch('simulate', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ ...readSettings(), traffic }),
    });
    body = await response.json();
  } catch (error) {
    if (runNumber === state.latestRun) setRunStatus(`The server did not answer: ${error}`, true);
    return;
  }
  if (runNumber !== state.latestRun) return;
  if (!response.ok) {
    setRunStatus(`Not run: ${body.message ?? response.statusText}`, true);
    return;
  }
  state.run = body;
  state.selection.index = null;
  renderLanes();
  renderDetails();
  const tookMs = Math.round(performance.now() - started);
  setRunStatus(`${describeTraffic(body)}: decided by the library in ${tookMs} ms.`);
  lanesElement.dataset.runs = String(Number(lanesElement.dataset.runs) + 1);
}

byId('settings').addEventListener('submit', (event) => {
  event.preventDefault();
  runTraffic('steady');
});
byId('run-burst').addEventListener('click', () => runTraffic('burst'));
byId('run-exploit').addEventListener('click', () => runTraffic('boundary-exploit'));
// A changed setting shows its effect at once: the same traffic runs again under it.
byId('settings').addEventListener('change', () => {
  if (state.lastPattern) runTraffic(state.lastPattern);
});

// ---------------------------------------------------------------------------------------------
// Timelines

function visibleRuns() {
  if (!state.run) return [];
  const { algorithms } = state.run;
  return state.view === 'comparison'
    ? algorithms
    : algorithms.filter((run) => run.algorithm === state.view);
}

function renderLanes() {
  state.layouts.clear();
  lanesElement.replaceChildren();
  const runs = visibleRuns();
  if (runs.length === 0) {
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
      element('article', { class: 'lane', 'data-lane': run.algorithm }, laneHeader(run), timeline),
    );
    drawTimeline(timeline, run, compact ? 104 : 220);
  }
}

function stat(name, label, value, extraClass = '') {
  return element(
    'div',
    { class: `stat ${name} ${extraClass}` },
    element('dt', {}, label),
    element('dd', { 'data-stat': name }, String(value)),
  );
}

function laneHeader(run) {
  const { limit, windowMs } = state.run;
  const busiest = run.busiestSpan.admitted;
  // What the policy means to allow in that span: its limit, once per window the span touches.
  const spanQuota = limit * Math.max(1, Math.ceil(state.config.busiestSpanMs / windowMs));
  const overQuota = busiest > spanQuota;
  const busiestNote = overQuota ? ` (${Number((busiest / spanQuota).toFixed(2))}× the quota)` : '';
  const stats = element(
    'dl',
    { class: 'stats' },
    stat('admitted', 'Admitted', run.admitted),
    stat('delayed', 'Delayed', run.delayed),
    stat('denied', 'Denied', run.denied),
    stat('busiest', 'Max admitted in any 2 s', busiest, overQuota ? 'over' : ''),
  );
  if (busiestNote) stats.lastChild.append(element('span', { class: 'note' }, busiestNote));
  return element('header', {}, element('h2', {}, NAMES[run.algorithm]), stats);
}

/**
 * The time axis spans the arrivals, so the traffic fills the width; delays reaching beyond it
 * are cut at the edge. Traffic arriving at one instant is shown until the last delayed request
 * proceeds instead, so that the leaky bucket's queue can be seen draining.
 */
function timeAxisSpan(run) {
  const lastArrivalMs = run.algorithms[0].requests.at(-1).atMs;
  if (lastArrivalMs > 0) return lastArrivalMs * 1.05 + 100;
  return Math.max(run.endMs, 1000) * 1.03;
}

/** Draws one algorithm's decisions against time, at the container's current width. */
function drawTimeline(container, run, height) {
  const { windowBoundariesMs, limit, burst } = state.run;
  const width = Math.max(container.clientWidth, 200);
  const margin = { left: 6, right: 6, top: 6 };
  const plotWidth = width - margin.left - margin.right;
  const axisTop = height - 18;
  const bandHeight = Math.round(height * 0.24);
  const bandTop = axisTop - 4 - bandHeight;
  const marksBottom = bandTop - 5;
  const domainMs = timeAxisSpan(state.run);
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
    const right = Math.min(x(busiest.fromMs + state.config.busiestSpanMs), plotEnd);
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

  const boundarySpacing = x(state.run.windowMs) - x(0);
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
    if (request.outcome === 'delayed') {
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

/** The step line of what each decision reported as left: requests, tokens or queue space. */
function drawRemainingBand(svg, run, { x, top, height, plotWidth, capacity }) {
  const scaleMax = Math.max(capacity, ...run.requests.map((request) => request.remaining));
  // The line keeps below the label's row, so the two never cross.
  const lineHeight = height - BAND_LABEL_PX;
  const y = (value) => top + height - (value / scaleMax) * lineHeight;
  svg.append(svgElement('rect', { class: 'band', x: x(0), y: top, width: plotWidth, height }));
  let path = '';
  for (const request of run.requests) {
    path += path === '' ? `M${x(request.atMs)},${y(request.remaining)}` : ` H${x(request.atMs)}`;
    path += ` V${y(request.remaining)}`;
  }
  svg.append(svgElement('path', { class: 'remaining', d: path }));
  const label = REMAINING_LABEL[run.algorithm] ?? 'remaining';
  svg.append(
    svgElement(
      'text',
      { class: 'band-label', x: x(0) + 3, y: top + 9 },
      `${label} (0–${scaleMax})`,
    ),
  );
}

const TICK_STEPS_MS = [100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3];

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

function select(algorithm, index) {
  state.selection = { algorithm, index };
  for (const drawn of state.layouts.keys()) drawSelection(drawn);
  renderDetails();
}

/** Outlines the selected request in its lane and marks the same moment in the other lanes. */
function drawSelection(algorithm) {
  const layout = state.layouts.get(algorithm);
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

// Timelines are drawn in real pixels, so redraw them when their width changes (not their height,
// which drawing itself changes).
let drawnWidth = 0;
new ResizeObserver(([entry]) => {
  if (entry.contentRect.width === drawnWidth) return;
  drawnWidth = entry.contentRect.width;
  requestAnimationFrame(renderLanes);
}).observe(lanesElement);

// ---------------------------------------------------------------------------------------------
// The selected request

function renderDetails() {
  const { algorithm, index } = state.selection;
  const run = state.run?.algorithms.find((candidate) => candidate.algorithm === algorithm);
  const request = index === null ? undefined : run?.requests[index];
  if (!request) {
    detailsElement.replaceChildren(
      element(
        'p',
        { class: 'hint' },
        'Click a mark on a timeline, or focus a timeline and use the arrow keys, to see the ' +
          'decision and the response headers its client would have received.',
      ),
    );
    return;
  }
  const verdict =
    request.outcome === 'denied'
      ? 'denied'
      : request.outcome === 'delayed'
        ? `admitted after waiting ${seconds(request.delayMs)}`
        : 'admitted';
  const facts = element('dl', { class: 'facts' });
  const fact = (label, value) => facts.append(element('dt', {}, label), element('dd', {}, value));
  fact('Arrived at', seconds(request.atMs));
  const remainingLabel = REMAINING_LABEL[algorithm] ?? 'remaining';
  fact(remainingLabel[0].toUpperCase() + remainingLabel.slice(1), String(request.remaining));
  fact('Full again in', seconds(request.resetMs));
  if (request.outcome === 'denied') fact('Retry after', seconds(request.retryAfterMs));
  if (request.outcome === 'delayed') fact('Handler runs at', seconds(request.proceedsAtMs));

  const statusLine = `HTTP/1.1 ${request.status} ${STATUS_TEXT[request.status]}`;
  const headerLines = Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`);
  const elsewhere = element('ul', { class: 'elsewhere' });
  for (const other of state.run.algorithms) {
    if (other.algorithm === algorithm) continue;
    const { outcome, status } = other.requests[index];
    elsewhere.append(
      element('li', { class: outcome }, `${NAMES[other.algorithm]}: ${status} ${outcome}`),
    );
  }
  detailsElement.replaceChildren(
    element(
      'p',
      { class: `verdict ${request.outcome}` },
      element('strong', {}, `${request.status} ${STATUS_TEXT[request.status]}`),
      ` — ${verdict}`,
    ),
    element('p', {}, `Request ${index + 1} of ${run.requests.length}, ${NAMES[algorithm]}.`),
    facts,
    element('h3', {}, 'Response headers'),
    element(
      'pre',
      { class: 'headers', id: 'selected-headers' },
      [statusLine, ...headerLines].join('\n'),
    ),
    element('h3', {}, 'The same request elsewhere'),
    elsewhere,
  );
}

// ---------------------------------------------------------------------------------------------
// Live mode: real requests to the sample app's rate-limited routes

const live = {
  sent: 0,
  statusCounts: new Map(),
  autoTimer: null,
  /** Bumped by "Clear log", so answers to requests sent before it are not counted after it. */
  logGeneration: 0,
};
const liveLog = byId('live-log');
const liveAlgorithm = byId('live-algorithm');

/** Header names as a client would read them; fetch hands them over in lower case. */
function headerName(lowerCase) {
  return lowerCase
    .split('-')
    .map((part) => (part === 'ratelimit' ? 'RateLimit' : part[0].toUpperCase() + part.slice(1)))
    .join('-');
}

function isRateLimitHeader(name) {
  return name.includes('ratelimit') || name === 'retry-after';
}

function updateLiveSummary() {
  const parts = [...live.statusCounts].map(([status, count]) => `${status}: ${count}`);
  byId('live-summary').textContent =
    live.sent === 0 ? '' : `Sent ${live.sent} · ${parts.join(' · ') || 'waiting…'}`;
}

async function sendLiveRequest() {
  const algorithm = liveAlgorithm.value;
  const generation = live.logGeneration;
  const number = ++live.sent;
  const badge = element('span', { class: 'badge' }, '…');
  const timing = element('span', { class: 'timing' }, 'waiting');
  const headers = element('pre', { class: 'live-headers' });
  const entry = element(
    'li',
    { class: 'live-entry pending', 'data-number': String(number) },
    badge,
    element('span', { class: 'what' }, `#${number} GET live/${algorithm}`),
    timing,
    headers,
  );
  liveLog.prepend(entry);
  updateLiveSummary();
  const started = performance.now();
  try {
    const response = await fetch(`live/${algorithm}`, { cache: 'no-store' });
    await response.text();
    const lines = [];
    response.headers.forEach((value, name) => {
      if (isRateLimitHeader(name)) lines.push(`${headerName(name)}: ${value}`);
    });
    badge.textContent = String(response.status);
    entry.dataset.status = String(response.status);
    headers.textContent = lines.join('\n') || '(no RateLimit headers)';
    if (generation === live.logGeneration) {
      live.statusCounts.set(response.status, (live.statusCounts.get(response.status) ?? 0) + 1);
    }
  } catch (error) {
    badge.textContent = 'error';
    entry.dataset.status = 'error';
    headers.textContent = String(error);
  }
  entry.classList.remove('pending');
  timing.textContent = `answered in ${Math.round(performance.now() - started)} ms`;
  updateLiveSummary();
}

function stopAutoSend() {
  if (live.autoTimer === null) return;
  clearInterval(live.autoTimer);
  live.autoTimer = null;
  byId('live-auto').setAttribute('aria-pressed', 'false');
  byId('live-auto').textContent = 'Send 1 per second';
}

byId('live-send-one').addEventListener('click', () => sendLiveRequest());
byId('live-send-ten').addEventListener('click', () => {
  for (let count = 0; count < 10; count++) sendLiveRequest();
});
byId('live-auto').addEventListener('click', () => {
  if (live.autoTimer !== null) return stopAutoSend();
  sendLiveRequest();
  live.autoTimer = setInterval(sendLiveRequest, 1000);
  byId('live-auto').setAttribute('aria-pressed', 'true');
  byId('live-auto').textContent = 'Stop sending';
});
byId('live-clear').addEventListener('click', () => {
  liveLog.replaceChildren();
  live.logGeneration++;
  live.sent = 0;
  live.statusCounts.clear();
  updateLiveSummary();
});

// ---------------------------------------------------------------------------------------------
// Start-up

async function start() {
  const response = await fetch('config');
  state.config = await response.json();
  const { store, live: livePolicy, algorithms, burstSize } = state.config;
  byId('run-burst').textContent = `Send a ${burstSize}-request burst`;
  byId('store-note').textContent =
    store === 'redis'
      ? 'Every decision below comes from the library’s Lua scripts on Redis, on a virtual clock.'
      : 'Every decision below comes from the library’s embedded in-process store (no Redis ' +
        'configured), on a virtual clock.';
  document.body.dataset.store = store;
  byId('header-style').value = state.config.headerStyle;
  for (const algorithm of algorithms) {
    liveAlgorithm.append(element('option', { value: algorithm }, NAMES[algorithm]));
  }
  byId('live-policy').textContent =
    `Real HTTP requests from this browser to GET live/<algorithm>, each limited by ` +
    `@RateLimit({ name: '${livePolicy.name}', algorithm, limit: ${livePolicy.limit}, ` +
    `window: '${livePolicy.window}' }) per client IP, on the wall clock.`;
  showView(state.view);
  byId('settings').requestSubmit();
}

start().catch((error) => {
  byId('store-note').textContent = `Could not load the sandbox configuration: ${error}`;
});
