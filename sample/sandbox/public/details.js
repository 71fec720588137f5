// @ts-check
// The selected request: the decision, and the response its client would have received.

import { NAMES, remainingLabel } from './algorithms.js';
import { byId, element, seconds } from './dom.js';
import { state } from './state.js';

const STATUS_TEXT = { 200: 'OK', 401: 'Unauthorized', 429: 'Too Many Requests' };
/** Login attempts the policy admitted: what their outcome did to the charge. */
const LOGIN_VERDICTS = {
  failed: 'admitted: a wrong password, counted',
  refunded: 'admitted: the right password, given back after the response',
};
const HINT =
  'Click a mark on a timeline, or focus a timeline and use the arrow keys, to see the ' +
  'decision and the response headers its client would have received.';

const detailsElement = byId('details', HTMLElement);

export function renderDetails() {
  const { algorithm, index } = state.selection;
  const run = state.run?.algorithms.find((candidate) => candidate.algorithm === algorithm);
  const request = index === null ? undefined : run?.requests[index];
  if (!state.run || !run || !request || index === null) {
    detailsElement.replaceChildren(element('p', { class: 'hint' }, HINT));
    return;
  }
  const verdict =
    request.outcome === 'denied'
      ? 'denied'
      : request.outcome === 'delayed'
        ? `admitted after waiting ${seconds(request.delayMs)}`
        : request.outcome === 'failed' || request.outcome === 'refunded'
          ? LOGIN_VERDICTS[request.outcome]
          : 'admitted';
  const facts = element('dl', { class: 'facts' });
  /** @param {string} label @param {string} value */
  const fact = (label, value) => facts.append(element('dt', {}, label), element('dd', {}, value));
  fact('Arrived at', seconds(request.atMs));
  if (request.rightPassword !== undefined) {
    fact('Password', request.rightPassword ? 'right' : 'wrong');
  }
  const remaining = remainingLabel(run.algorithm);
  fact(remaining[0].toUpperCase() + remaining.slice(1), String(request.remaining));
  fact('Full again in', seconds(request.resetMs));
  if (request.outcome === 'denied') fact('Retry after', seconds(request.retryAfterMs));
  if (request.proceedsAtMs !== null && request.outcome === 'delayed') {
    fact('Handler runs at', seconds(request.proceedsAtMs));
  }

  const statusLine = `HTTP/1.1 ${request.status} ${STATUS_TEXT[request.status]}`;
  const headerLines = Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`);
  const elsewhere = element('ul', { class: 'elsewhere' });
  for (const other of state.run.algorithms) {
    if (other.algorithm === run.algorithm) continue;
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
    element('p', {}, `Request ${index + 1} of ${run.requests.length}, ${NAMES[run.algorithm]}.`),
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
