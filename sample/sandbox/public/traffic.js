// @ts-check
// Running traffic through the library: the settings form, the run buttons and the status line.

import { renderDetails } from './details.js';
import { byId } from './dom.js';
import { state } from './state.js';
import { renderLanes } from './timelines.js';

/** @import { HeaderStyle, SimulationRun, Traffic } from '../simulation.js' */

/**
 * What POST simulate takes. Empty fields go as null: the server names what it refuses.
 * @typedef {object} SimulateRequest
 * @property {number | null} limit
 * @property {number | null} windowMs
 * @property {number | null} burst
 * @property {HeaderStyle} headerStyle
 * @property {Traffic} traffic
 */

const form = byId('settings', HTMLFormElement);
const lanesElement = byId('lanes', HTMLElement);
const runStatus = byId('run-status', HTMLElement);

/**
 * @param {string} text
 * @param {boolean} [isError]
 */
function setRunStatus(text, isError = false) {
  runStatus.textContent = text;
  runStatus.classList.toggle('error', isError);
}

/** @param {string} id */
function numberField(id) {
  const { value } = byId(id, HTMLInputElement);
  return value === '' ? null : Number(value);
}

/** @returns {Omit<SimulateRequest, 'traffic'>} */
function readSettings() {
  const windowSeconds = numberField('window');
  return {
    limit: numberField('limit'),
    windowMs: windowSeconds === null ? null : Math.round(windowSeconds * 1000),
    burst: numberField('burst'),
    headerStyle: /** @type {HeaderStyle} */ (byId('header-style', HTMLSelectElement).value),
  };
}

/** @param {SimulationRun} run */
function describeTraffic(run) {
  const { traffic, limit } = run;
  const count = run.algorithms[0].requests.length;
  if (traffic.pattern === 'steady') {
    return `${count} requests, ${traffic.ratePerSecond}/s for ${traffic.durationSeconds} s`;
  }
  if (traffic.pattern === 'burst') return `${count} requests at the same instant`;
  if (traffic.pattern === 'login') {
    return (
      `${count} login attempts, ${traffic.ratePerSecond}/s, ${traffic.successPercent}% with the ` +
      `right password; only failures count, and a denial blocks for a window`
    );
  }
  return `${limit} requests in the second before a window boundary, ${limit} in the second after`;
}

/**
 * The traffic of a pattern; steady traffic takes its rate and duration from the form.
 * @param {Traffic['pattern']} pattern
 * @returns {Traffic}
 */
function trafficFor(pattern) {
  if (pattern !== 'steady' && pattern !== 'login') return { pattern };
  const steady = {
    ratePerSecond: Number(byId('rate', HTMLInputElement).value),
    durationSeconds: Number(byId('duration', HTMLInputElement).value),
  };
  if (pattern === 'steady') return { pattern, ...steady };
  return { pattern, ...steady, successPercent: Number(byId('success', HTMLInputElement).value) };
}

/** @param {Traffic['pattern']} pattern */
async function runTraffic(pattern) {
  state.lastPattern = pattern;
  /** @type {SimulateRequest} */
  const request = { ...readSettings(), traffic: trafficFor(pattern) };
  const runNumber = ++state.latestRun;
  setRunStatus('Simulating…');
  const started = performance.now();
  let response;
  let body;
  try {
    response = await fetch('simulate', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(request),
    });
    body = await response.json();
  } catch (error) {
    if (runNumber === state.latestRun) setRunStatus(`The server did not answer: ${error}`, true);
    return;
  }
  if (runNumber !== state.latestRun) return;
  if (!response.ok) {
    /** @type {{ message?: string }} Nest's error body */
    const refusal = body;
    setRunStatus(`Not run: ${refusal.message ?? response.statusText}`, true);
    return;
  }
  /** @type {SimulationRun} */
  const run = body;
  state.run = run;
  state.selection.index = null;
  renderLanes();
  renderDetails();
  const tookMs = Math.round(performance.now() - started);
  setRunStatus(`${describeTraffic(run)}: decided by the library in ${tookMs} ms.`);
  lanesElement.dataset.runs = String(Number(lanesElement.dataset.runs) + 1);
}

export function setUpTrafficControls() {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    runTraffic('steady');
  });
  byId('run-burst', HTMLButtonElement).addEventListener('click', () => runTraffic('burst'));
  byId('run-exploit', HTMLButtonElement).addEventListener('click', () =>
    runTraffic('boundary-exploit'),
  );
  byId('run-login', HTMLButtonElement).addEventListener('click', () => runTraffic('login'));
  // A changed setting shows its effect at once: the same traffic runs again under it.
  form.addEventListener('change', () => {
    if (state.lastPattern) runTraffic(state.lastPattern);
  });
}

/** Runs the form's steady traffic, as its submit button does. */
export function runSteadyTraffic() {
  form.requestSubmit();
}
