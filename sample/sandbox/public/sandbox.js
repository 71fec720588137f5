// @ts-check
// The sandbox page. It draws what the server's simulation returns and never decides anything
// itself: every admitted, delayed or denied mark is a decision made by the library.

import { byId } from './dom.js';
import { setUpLive } from './live.js';
import { setUpLiveMetrics } from './live-metrics.js';
import { setUpPods } from './pods.js';
import { state } from './state.js';
import { setUpTabs, showView } from './tabs.js';
import { redrawOnResize } from './timelines.js';
import { runSteadyTraffic, setUpTrafficControls } from './traffic.js';

/** @import { SandboxConfig } from '../sandbox.controller.js' */

const storeNote = byId('store-note', HTMLElement);

async function start() {
  const response = await fetch('config');
  /** @type {SandboxConfig} */
  const config = await response.json();
  state.config = config;
  byId('run-burst', HTMLButtonElement).textContent = `Send a ${config.burstSize}-request burst`;
  storeNote.textContent =
    config.store === 'redis'
      ? 'Every decision below comes from the library’s Lua scripts on Redis, on a virtual clock.'
      : 'Every decision below comes from the library’s embedded in-process store (no Redis ' +
        'configured), on a virtual clock.';
  document.body.dataset.store = config.store;
  byId('header-style', HTMLSelectElement).value = config.headerStyle;
  setUpLive(config);
  setUpLiveMetrics(config);
  setUpPods();
  setUpTrafficControls();
  setUpTabs();
  showView(state.view);
  runSteadyTraffic();
}

redrawOnResize();
start().catch((error) => {
  storeNote.textContent = `Could not load the sandbox configuration: ${error}`;
});
