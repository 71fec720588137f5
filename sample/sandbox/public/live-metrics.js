// @ts-check
// The Live tab's counts: the limiter's own OpenTelemetry metrics, read from the sample's
// /metrics (Prometheus text) while the tab is shown, when the app runs with METRICS=1.

import { byId, element } from './dom.js';

/** @import { SandboxConfig } from '../sandbox.controller.js' */

const POLL_MS = 1_000;
/** Shown from the start; other outcomes (delayed, failed_open...) once they are counted. */
const ALWAYS_SHOWN = ['allowed', 'denied'];
const SAMPLE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

const panel = byId('live-metrics', HTMLElement);
const liveAlgorithm = byId('live-algorithm', HTMLSelectElement);
const livePanel = byId('live', HTMLElement);

/**
 * Each sample of a Prometheus text exposition: name, labels, value.
 * @param {string} text
 */
function parse(text) {
  /** @type {{ name: string, labels: Record<string, string>, value: number }[]} */
  const samples = [];
  for (const line of text.split('\n')) {
    const match = SAMPLE.exec(line);
    if (!match) continue;
    /** @type {Record<string, string>} */
    const labels = {};
    for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) labels[name] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/**
 * The route id of a live route: its class and method (`sliding-window-log` is served by
 * `SandboxLiveController.slidingWindowLog`).
 * @param {string} algorithm
 */
function routeOf(algorithm) {
  return `SandboxLiveController.${algorithm.replace(/-(\w)/g, (_, letter) => letter.toUpperCase())}`;
}

/** @param {string} text */
function render(text) {
  const route = routeOf(liveAlgorithm.value);
  const samples = parse(text);
  /** @param {string} name @param {(labels: Record<string, string>) => boolean} [where] */
  const total = (name, where = () => true) =>
    samples
      .filter((sample) => sample.name === name && where(sample.labels))
      .reduce((sum, sample) => sum + sample.value, 0);
  const onRoute = (/** @type {Record<string, string>} */ labels) =>
    labels.rate_limiting_route === route;
  const outcomes = new Set(ALWAYS_SHOWN);
  for (const { name, labels } of samples) {
    if (name === 'rate_limiting_decisions_total' && onRoute(labels)) {
      outcomes.add(labels.rate_limiting_outcome);
    }
  }
  /** @type {[key: string, label: string, count: number][]} */
  const rows = [...outcomes].map((outcome) => [
    outcome,
    outcome,
    total(
      'rate_limiting_decisions_total',
      (labels) => onRoute(labels) && labels.rate_limiting_outcome === outcome,
    ),
  ]);
  rows.push(
    ['near_limit', 'near limit', total('rate_limiting_near_limit_decisions_total', onRoute)],
    [
      'store_calls',
      'store calls (whole app, simulations too)',
      total('rate_limiting_store_operation_duration_count'),
    ],
    ['store_failures', 'store failures (whole app)', total('rate_limiting_store_failures_total')],
  );
  panel.replaceChildren(
    element('h3', {}, `Metrics of ${route}, from /metrics`),
    element(
      'dl',
      { class: 'live-counts' },
      ...rows.flatMap(([key, label, count]) => [
        element('dt', {}, label),
        element('dd', { 'data-count': key }, String(count)),
      ]),
    ),
  );
}

export async function refreshLiveMetrics() {
  if (panel.dataset.enabled !== 'true' || livePanel.hidden) return;
  try {
    const response = await fetch('../metrics', { cache: 'no-store' });
    render(await response.text());
  } catch (error) {
    panel.textContent = `Could not read /metrics: ${error}`;
  }
}

/**
 * Shows the counts when the app records metrics, else how to turn them on.
 * @param {SandboxConfig} config
 */
export function setUpLiveMetrics(config) {
  panel.dataset.enabled = String(config.metrics);
  if (!config.metrics) {
    panel.textContent =
      'Start the sample with METRICS=1 to see the limiter’s OpenTelemetry metrics here ' +
      '(and in Prometheus text at /metrics).';
    return;
  }
  liveAlgorithm.addEventListener('change', refreshLiveMetrics);
  window.setInterval(refreshLiveMetrics, POLL_MS);
}
