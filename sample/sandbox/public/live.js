// @ts-check
// Live mode: real requests from this browser to the sample app's rate-limited routes.

import { NAMES } from './algorithms.js';
import { byId, element } from './dom.js';
import { refreshLiveMetrics } from './live-metrics.js';

/** @import { SandboxConfig } from '../sandbox.controller.js' */

const live = {
  sent: 0,
  /** @type {Map<number, number>} responses by status code */
  statusCounts: new Map(),
  /** @type {number | null} */
  autoTimer: null,
  /** Bumped by "Clear log", so answers to requests sent before it are not counted after it. */
  logGeneration: 0,
};
const liveLog = byId('live-log', HTMLOListElement);
const liveAlgorithm = byId('live-algorithm', HTMLSelectElement);
const autoButton = byId('live-auto', HTMLButtonElement);
const summary = byId('live-summary', HTMLElement);

/**
 * Header names as a client would read them; fetch hands them over in lower case.
 * @param {string} lowerCase
 */
function headerName(lowerCase) {
  return lowerCase
    .split('-')
    .map((part) => (part === 'ratelimit' ? 'RateLimit' : part[0].toUpperCase() + part.slice(1)))
    .join('-');
}

/** @param {string} name */
function isRateLimitHeader(name) {
  return name.includes('ratelimit') || name === 'retry-after';
}

function updateLiveSummary() {
  const parts = [...live.statusCounts].map(([status, count]) => `${status}: ${count}`);
  summary.textContent =
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
    /** @type {string[]} */
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
  refreshLiveMetrics();
}

export function stopAutoSend() {
  if (live.autoTimer === null) return;
  window.clearInterval(live.autoTimer);
  live.autoTimer = null;
  autoButton.setAttribute('aria-pressed', 'false');
  autoButton.textContent = 'Send 1 per second';
}

/**
 * Fills in the live routes the server offers and wires the buttons.
 * @param {SandboxConfig} config
 */
export function setUpLive({ algorithms, live: policy }) {
  for (const algorithm of algorithms) {
    liveAlgorithm.append(element('option', { value: algorithm }, NAMES[algorithm]));
  }
  byId('live-policy', HTMLElement).textContent =
    `Real HTTP requests from this browser to GET live/<algorithm>, each limited by ` +
    `@RateLimit({ name: '${policy.name}', algorithm, limit: ${policy.limit}, ` +
    `window: '${policy.window}' }) per client IP, on the wall clock.`;

  byId('live-send-one', HTMLButtonElement).addEventListener('click', () => sendLiveRequest());
  byId('live-send-ten', HTMLButtonElement).addEventListener('click', () => {
    for (let count = 0; count < 10; count++) sendLiveRequest();
  });
  autoButton.addEventListener('click', () => {
    if (live.autoTimer !== null) return stopAutoSend();
    sendLiveRequest();
    live.autoTimer = window.setInterval(sendLiveRequest, 1000);
    autoButton.setAttribute('aria-pressed', 'true');
    autoButton.textContent = 'Stop sending';
  });
  byId('live-clear', HTMLButtonElement).addEventListener('click', () => {
    liveLog.replaceChildren();
    live.logGeneration++;
    live.sent = 0;
    live.statusCounts.clear();
    updateLiveSummary();
  });
}
