// @ts-check
// Tabs: one view per algorithm, the comparison of all five, pods with leases, and live mode.

import { ABOUT, EXPLOIT_VIEWS } from './algorithms.js';
import { renderDetails } from './details.js';
import { byId } from './dom.js';
import { stopAutoSend } from './live.js';
import { state } from './state.js';
import { renderLanes } from './timelines.js';

/** @import { View } from './state.js' */

const tabs = [...document.querySelectorAll('[role="tab"]')].filter(
  (tab) => tab instanceof HTMLElement,
);

/** @param {HTMLElement} tab */
const viewOf = (tab) => /** @type {View} */ (tab.dataset.view);

/** @param {View} view */
export function showView(view) {
  state.view = view;
  for (const tab of tabs) {
    const selected = viewOf(tab) === view;
    tab.setAttribute('aria-selected', String(selected));
    tab.tabIndex = selected ? 0 : -1;
  }
  const live = view === 'live';
  const pods = view === 'pods';
  const simulator = byId('simulator', HTMLElement);
  byId('live', HTMLElement).hidden = !live;
  byId('pods', HTMLElement).hidden = !pods;
  simulator.hidden = live || pods;
  if (live) return;
  stopAutoSend();
  if (pods) return;
  simulator.setAttribute('aria-labelledby', `tab-${view}`);
  byId('run-exploit', HTMLButtonElement).hidden = !EXPLOIT_VIEWS.has(view);
  byId('about', HTMLElement).textContent = ABOUT[view];
  if (view !== 'comparison') state.selection.algorithm = view;
  renderLanes();
  renderDetails();
}

/** Arrow keys, Home and End move between tabs, as in the WAI-ARIA tabs pattern. */
const KEY_MOVES = {
  /** @param {number} index @param {number} count */
  ArrowRight: (index, count) => (index + 1) % count,
  /** @param {number} index @param {number} count */
  ArrowLeft: (index, count) => (index - 1 + count) % count,
  Home: () => 0,
  /** @param {number} _index @param {number} count */
  End: (_index, count) => count - 1,
};

export function setUpTabs() {
  for (const tab of tabs) {
    tab.addEventListener('click', () => showView(viewOf(tab)));
    tab.addEventListener('keydown', (event) => {
      if (!(event.key in KEY_MOVES)) return;
      const move = KEY_MOVES[/** @type {keyof KEY_MOVES} */ (event.key)];
      const next = tabs[move(tabs.indexOf(tab), tabs.length)];
      event.preventDefault();
      next.focus();
      showView(viewOf(next));
    });
  }
}
