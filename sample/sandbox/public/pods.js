// @ts-check
// The pods view: the server runs one client's requests over several pods, exact and leased,
// and this draws what the library decided: admissions and the store calls they took.

import { byId, element } from './dom.js';

/** @import { PodsOutcome, PodsRun } from '../pods-simulation.js' */

const form = byId('pods-settings', HTMLFormElement);
const status = byId('pods-status', HTMLElement);
const results = byId('pods-results', HTMLElement);

/** @param {string} id */
const valueOf = (id) => Number(byId(id, HTMLInputElement).value);

/**
 * @param {string} title
 * @param {PodsOutcome} outcome
 * @param {number} limit
 */
function outcomeBlock(title, outcome, limit) {
  const perAdmitted = outcome.admitted === 0 ? 0 : outcome.storeCalls / outcome.admitted;
  // Each term with its value in a cell of its own: the grid's columns never part them.
  /** @type {(term: string, field: string, value: string) => HTMLElement} */
  const count = (term, field, value) =>
    element('div', {}, element('dt', {}, term), element('dd', { 'data-field': field }, value));
  const counts = element(
    'dl',
    { class: 'live-counts' },
    count('admitted', 'admitted', `${outcome.admitted} of a limit of ${limit}`),
    count('denied', 'denied', String(outcome.denied)),
    count('store calls', 'store-calls', String(outcome.storeCalls)),
    count('store calls per admission', 'per-admission', perAdmitted.toFixed(3)),
  );
  const perPod = outcome.perPod
    .map((pod, i) => `pod ${i + 1}: ${pod.admitted} admitted, ${pod.storeCalls} store calls`)
    .join(' · ');
  return element(
    'div',
    { 'data-mode': title },
    element('h3', {}, title),
    counts,
    element('p', { class: 'hint' }, perPod),
  );
}

/** @param {PodsRun} run */
function render(run) {
  const { settings } = run;
  results.replaceChildren(
    outcomeBlock('exact', run.exact, settings.limit),
    outcomeBlock(`lease ${settings.lease}`, run.leased, settings.limit),
  );
}

async function runPods() {
  status.textContent = 'Running…';
  const settings = {
    pods: valueOf('pods-count'),
    lease: valueOf('pods-lease'),
    limit: valueOf('pods-limit'),
    requests: valueOf('pods-requests'),
  };
  const response = await fetch('pods', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(settings),
  });
  const body = await response.json();
  if (!response.ok) {
    status.textContent = body.message ?? `The server answered ${response.status}`;
    return;
  }
  render(body);
  status.textContent =
    document.body.dataset.store === 'redis'
      ? 'Both runs admit at most the limit; the lease takes far fewer store calls.'
      : 'On the embedded store a lease decides directly: both runs are exact.';
}

export function setUpPods() {
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    runPods().catch((error) => {
      status.textContent = `The run failed: ${error}`;
    });
  });
}
