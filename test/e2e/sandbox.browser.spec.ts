import 'reflect-metadata';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import type { Browser, Page } from 'playwright-core';
import { RateLimitModule } from '../../lib/index.js';
import { prometheusMetrics } from '../../sample/metrics.js';
import { SandboxModule } from '../../sample/sandbox/sandbox.module.js';
import { CHROMIUM_SETUP_TIMEOUT_MS, launchChromium } from '../support/browser.js';
import { startRedisServer, type RedisServer } from '../support/redis-server.js';

/**
 * The sandbox page in headless Chromium, against the embedded store (Express) and against a
 * real redis-server (Fastify): what it shows must be the library's own decisions.
 */
/**
 * The docs' pictures (docs/<name>.png: the README's comparison, docs/leases.md's pods) are
 * refreshed only on request (UPDATE_SCREENSHOT=1 npm test): they hold measured run times, so
 * writing them on every run would leave the work tree changed. Else each is taken and removed.
 */
const screenshotPath = (name: string) =>
  process.env.UPDATE_SCREENSHOT
    ? fileURLToPath(new URL(`../../docs/${name}.png`, import.meta.url))
    : join(tmpdir(), `${name}-${process.pid}.png`);
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
/** The page's defaults: 10 requests per 10 s window, burst = limit. */
const LIMIT = 10;
const ALGORITHM_TABS = {
  'sliding-window-log': 'Sliding Window Log',
  'sliding-window-counter': 'Sliding Window Counter',
  'token-bucket': 'Token Bucket',
  'leaky-bucket': 'Leaky Bucket',
  'fixed-window': 'Fixed Window',
} as const;
type Algorithm = keyof typeof ALGORITHM_TABS;

let browser: Browser;
beforeAll(async () => {
  // On a machine without chromium, this is where the test installs it (as root) or says how.
  browser = await launchChromium();
}, CHROMIUM_SETUP_TIMEOUT_MS);
afterAll(() => browser?.close());

interface Setup {
  store: 'embedded' | 'redis';
  adapter: 'express' | 'fastify';
  /** Only one setup writes docs/sandbox.png: the one with Redis, as users would deploy it. */
  takesScreenshot: boolean;
}

describe.each<Setup>([
  { store: 'embedded', adapter: 'express', takesScreenshot: false },
  { store: 'redis', adapter: 'fastify', takesScreenshot: true },
])('sandbox on the $store store ($adapter)', ({ store, adapter, takesScreenshot }) => {
  const metered = store === 'redis';
  let redis: RedisServer | undefined;
  let app: INestApplication;
  let sandboxUrl: string;
  let page: Page;
  const requestedUrls: string[] = [];
  /** Console errors, uncaught exceptions and failed requests, as a developer would see them. */
  const consoleErrors: string[] = [];
  const pageErrors: string[] = [];
  const failedResponses: string[] = [];
  /** The page as it is, as docs/<name>.png, by the setup that takes screenshots. */
  const screenshot = async (name: string) => {
    if (!takesScreenshot) return;
    const path = screenshotPath(name);
    mkdirSync(dirname(path), { recursive: true });
    await page.screenshot({ path, fullPage: true });
    expect(statSync(path).size).toBeGreaterThan(10_000);
    if (!process.env.UPDATE_SCREENSHOT) rmSync(path);
  };

  beforeAll(async () => {
    redis = store === 'redis' ? await startRedisServer() : undefined;
    // With Redis, as `METRICS=1 npm start` runs it: metrics served at /metrics.
    const metrics = metered ? prometheusMetrics() : undefined;
    const moduleRef = await Test.createTestingModule({
      imports: [
        // A loaded CI machine can stall the event loop past the default 100 ms deadline, and
        // the guard would then fail open and let an extra live request through.
        RateLimitModule.forRoot({
          redis: redis?.url,
          timeout: 2_000,
          metrics: metrics && { meterProvider: metrics.meterProvider },
        }),
        SandboxModule,
      ],
      controllers: metrics ? [metrics.controller] : [],
    }).compile();
    app =
      adapter === 'fastify'
        ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: ['error'] })
        : moduleRef.createNestApplication({ logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    sandboxUrl = `${await app.getUrl()}/sandbox`;
    page = await browser.newPage({ viewport: DESKTOP });
    // Fail on the missing element with Playwright's message, well before Jest's own timeout.
    page.setDefaultTimeout(10_000);
    page.on('request', (request) => requestedUrls.push(request.url()));
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('response', (response) => {
      if (response.status() >= 400) failedResponses.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(sandboxUrl);
    // The page runs its default steady traffic once it has loaded.
    await page.waitForSelector('#lanes[data-runs="1"], #run-status.error');
    expect(await page.textContent('#run-status')).not.toContain('Not run');
  }, 20_000);

  afterAll(async () => {
    await page?.close();
    await app?.close();
    await redis?.stop();
  });

  const stat = async (algorithm: Algorithm, name: string): Promise<number> =>
    Number(await page.textContent(`[data-lane="${algorithm}"] [data-stat="${name}"]`));

  /** Does what starts a simulation and waits until the page has drawn the library's answer. */
  const runAfter = async (action: () => Promise<unknown>): Promise<void> => {
    const runsBefore = Number(await page.getAttribute('#lanes', 'data-runs'));
    await action();
    await page.waitForFunction(
      (before) =>
        Number(document.getElementById('lanes')?.dataset.runs) > before ||
        document.querySelector('#run-status.error') !== null,
      runsBefore,
    );
    expect(await page.getAttribute('#run-status', 'class')).not.toContain('error');
  };

  const run = (button: string) =>
    runAfter(() => page.getByRole('button', { name: button }).click());

  const showTab = (name: string) => page.getByRole('tab', { name, exact: true }).click();

  const selectedHeaders = () => page.textContent('#selected-headers');

  /** Waits until the Live tab's metrics panel shows `count` for `name`. */
  const liveCount = (name: string, count: number) =>
    page.waitForSelector(`#live-metrics [data-count="${name}"]:text-is("${count}")`);

  it('loads its modules and icon from the app without a console error', async () => {
    await page.waitForSelector(`body[data-store="${store}"]`);
    const origin = new URL(sandboxUrl).origin;
    const loaded = requestedUrls.map((url) => new URL(url).pathname);
    expect(loaded).toEqual(
      expect.arrayContaining([
        '/sandbox/sandbox.js',
        '/sandbox/timelines.js',
        '/sandbox/live.js',
        '/sandbox/favicon.svg',
      ]),
    );
    expect(await (await fetch(`${origin}/sandbox/favicon.svg`)).text()).toContain('<svg');
    expect({ consoleErrors, pageErrors, failedResponses }).toEqual({
      consoleErrors: [],
      pageErrors: [],
      failedResponses: [],
    });
  });

  it("serves the page's files and nothing else from its folder", async () => {
    const origin = new URL(sandboxUrl).origin;
    const script = await fetch(`${origin}/sandbox/dom.js`);
    expect(script.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${origin}/sandbox/tsconfig.json`)).status).toBe(404);
    expect((await fetch(`${origin}/sandbox/index.html`)).status).toBe(404);
  });

  it('says which store decides', async () => {
    await page.waitForSelector(`body[data-store="${store}"]`);
    expect(await page.textContent('#store-note')).toContain(
      store === 'redis' ? 'Lua scripts on Redis' : 'embedded in-process store',
    );
  });

  it('loads nothing from outside the app: no CDN, no remote fonts', () => {
    const origin = new URL(sandboxUrl).origin;
    expect(requestedUrls.length).toBeGreaterThan(0);
    expect(requestedUrls.filter((url) => new URL(url).origin !== origin)).toEqual([]);
  });

  it('runs a 15-request burst on every algorithm tab', async () => {
    for (const [algorithm, tab] of Object.entries(ALGORITHM_TABS) as [Algorithm, string][]) {
      await showTab(tab);
      await run('Send a 15-request burst');
      expect(await page.locator('[data-lane]').count()).toBe(1);
      expect(await stat(algorithm, 'admitted')).toBe(LIMIT);
      expect(await stat(algorithm, 'denied')).toBe(15 - LIMIT);
      // Only the leaky bucket queues: all but the first admitted request wait their turn.
      expect(await stat(algorithm, 'delayed')).toBe(algorithm === 'leaky-bucket' ? LIMIT - 1 : 0);
      expect(await page.isVisible('#run-exploit')).toBe(algorithm === 'fixed-window');
    }
  });

  it('lets the boundary exploit through a fixed window twice over, not a sliding log', async () => {
    await showTab('Fixed Window');
    await run('Boundary-burst exploit');
    expect(await stat('fixed-window', 'admitted')).toBe(2 * LIMIT);
    expect(await stat('fixed-window', 'busiest')).toBe(2 * LIMIT);
    expect(await page.textContent('[data-lane="fixed-window"] .stat.busiest')).toContain(
      '2× the quota',
    );

    // The 16th request is the 6th of the second window: admitted with 4 left.
    await page.click('[data-lane="fixed-window"] rect[data-index="15"]');
    expect(await selectedHeaders()).toMatch(
      /^HTTP\/1\.1 200 OK\nRateLimit-Policy: "sandbox";q=10;w=10\nRateLimit: "sandbox";r=4;t=\d+$/,
    );

    await showTab('Comparison');
    expect(await page.locator('[data-lane]').count()).toBe(5);
    expect(await stat('sliding-window-log', 'admitted')).toBe(LIMIT);
    expect(await stat('sliding-window-log', 'busiest')).toBe(LIMIT);
    expect(await stat('sliding-window-log', 'denied')).toBe(LIMIT);
    expect(await stat('fixed-window', 'busiest')).toBe(2 * LIMIT);

    await page.click('[data-lane="sliding-window-log"] rect[data-index="15"]');
    const denied = await selectedHeaders();
    expect(denied).toContain('HTTP/1.1 429 Too Many Requests');
    expect(denied).toMatch(/\nRetry-After: \d+$/);
    expect(await page.textContent('#details')).toContain('Fixed Window: 200 admitted');
  });

  it('is driven by the keyboard: tabs with arrows, timelines with arrows and End', async () => {
    await page.focus('[data-lane="token-bucket"] .timeline');
    await page.keyboard.press('End');
    expect(await page.textContent('#details')).toContain(`Request ${2 * LIMIT} of ${2 * LIMIT}`);
    await page.keyboard.press('ArrowLeft');
    expect(await page.textContent('#details')).toContain(`Request ${2 * LIMIT - 1} of`);

    await page.focus('[role="tab"][aria-selected="true"]');
    await page.keyboard.press('ArrowLeft');
    expect(await page.getAttribute('#tab-fixed-window', 'aria-selected')).toBe('true');
    await page.keyboard.press('ArrowRight');
    expect(await page.getAttribute('#tab-comparison', 'aria-selected')).toBe('true');
  });

  it('runs the same traffic again when a setting changes', async () => {
    await runAfter(() => page.selectOption('#header-style', 'both'));
    await page.click('[data-lane="fixed-window"] rect[data-index="15"]');
    expect(await selectedHeaders()).toContain(
      'X-RateLimit-Limit: 10\nX-RateLimit-Remaining: 4\nX-RateLimit-Reset: ',
    );
    expect(await stat('fixed-window', 'busiest')).toBe(2 * LIMIT);
    await runAfter(() => page.selectOption('#header-style', 'ietf'));
  });

  it('explains settings the server refuses', async () => {
    await page.fill('#limit', '0');
    await page.getByRole('button', { name: 'Send a 15-request burst' }).click();
    await page.waitForSelector('#run-status.error');
    expect(await page.textContent('#run-status')).toContain('limit must be a whole number');
    await page.fill('#limit', String(LIMIT));
    // Leave the comparison of the exploit on screen for the screenshot.
    await run('Boundary-burst exploit');
    await page.click('[data-lane="fixed-window"] rect[data-index="15"]');
    // The whole page, so the picture shows all five lanes and the selected request at once.
    await screenshot('sandbox');
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize(PHONE);
    await run('Send a 15-request burst');
    const overflow = await page.evaluate(
      () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
    );
    expect(overflow).toBe(0);
    expect(await page.isVisible('[data-lane="leaky-bucket"] svg')).toBe(true);
    await page.setViewportSize(DESKTOP);
  });

  it('counts only the failed logins, gives the right passwords back, then blocks', async () => {
    await showTab('Fixed Window');
    // The form's defaults: limit 10 per 10 s window, 2 attempts/s for 30 s, 20% right
    // (attempts 5, 10, 15, ...). Each window admits attempts until its 10th failure; the
    // next attempt is denied and blocks for a window, the right password included.
    await run('Login attempts');
    expect(await stat('fixed-window', 'admitted')).toBe(32);
    expect(await stat('fixed-window', 'failed')).toBe(26);
    expect(await stat('fixed-window', 'refunded')).toBe(6);
    expect(await stat('fixed-window', 'denied')).toBe(28);
    // The 15th attempt: the right password, refused by the block the 13th started.
    await page.click('[data-lane="fixed-window"] rect[data-index="14"]');
    expect(await selectedHeaders()).toMatch(/^HTTP\/1\.1 429 Too Many Requests\n/);
    expect(await page.textContent('#details')).toMatch(/Password\s*right/);
    // The 5th: admitted with the right password, and given back.
    await page.click('[data-lane="fixed-window"] rect[data-index="4"]');
    expect(await page.textContent('#details')).toContain('given back after the response');
    expect(await selectedHeaders()).toMatch(/^HTTP\/1\.1 200 OK\n/);
  });

  it('runs one client over pods, exact and leased, both at the limit', async () => {
    await showTab('Pods');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForSelector('#pods-results [data-mode="exact"]');
    const field = (mode: string, name: string) =>
      page.textContent(`#pods-results [data-mode="${mode}"] [data-field="${name}"]`);
    expect(await field('exact', 'admitted')).toBe('500 of a limit of 500');
    expect(await field('lease 10', 'admitted')).toBe('500 of a limit of 500');
    const exactCalls = Number(await field('exact', 'store-calls'));
    const leasedCalls = Number(await field('lease 10', 'store-calls'));
    // On the embedded store a lease decides directly.
    if (store === 'redis') expect(leasedCalls).toBeLessThan(exactCalls / 3);
    else expect(leasedCalls).toBe(exactCalls);
    await screenshot('sandbox-pods');
  });

  it('shows live responses and their RateLimit headers as they arrive', async () => {
    await showTab('Live');
    // The sliding log admits exactly `limit` in any window; a fixed window could roll over mid-test.
    await page.selectOption('#live-algorithm', 'sliding-window-log');
    if (metered) await liveCount('allowed', 0);
    await page.getByRole('button', { name: 'Send 1 request' }).click();
    await page.waitForSelector('.live-entry[data-status="200"]');
    expect(await page.textContent('.live-entry .live-headers')).toMatch(
      /RateLimit: "live";r=4;t=\d+/,
    );

    await page.getByRole('button', { name: 'Send 10 at once' }).click();
    await page.waitForFunction(
      () => document.querySelectorAll('.live-entry[data-status]').length === 11,
    );
    expect(await page.locator('.live-entry[data-status="200"]').count()).toBe(5);
    expect(await page.locator('.live-entry[data-status="429"]').count()).toBe(6);
    expect(await page.textContent('.live-entry[data-status="429"] .live-headers')).toMatch(
      /RateLimit: "live";r=0;t=\d+\nRateLimit-Policy: "live";q=5;w=10\nRetry-After: \d+/,
    );
    expect(await page.textContent('#live-summary')).toBe('Sent 11 · 200: 5 · 429: 6');
  });

  it(
    metered
      ? "counts the live decisions in the limiter's metrics, read from /metrics"
      : 'says how to see the metrics when the app records none',
    async () => {
      if (!metered) {
        expect(await page.textContent('#live-metrics')).toContain('METRICS=1');
        return;
      }
      await liveCount('allowed', 5);
      // Concurrent denials: some ask Redis before the first is remembered by the deny cache.
      const counts = await page.$$eval('#live-metrics [data-count]', (nodes) =>
        Object.fromEntries(
          nodes.map((node) => [node.getAttribute('data-count'), node.textContent]),
        ),
      );
      expect(Number(counts.denied) + Number(counts.denied_cached ?? 0)).toBe(6);
      // Outcomes show up once counted: none failed open.
      expect(counts.failed_open).toBeUndefined();
      expect(Number(counts.store_calls)).toBeGreaterThanOrEqual(6);
    },
  );

  it('never threw in the page, and failed only the requests the tests meant to fail', () => {
    expect(pageErrors).toEqual([]);
    const path = (entry: string) => new URL(entry.split(' ')[1]).pathname;
    // The refused settings (400) and the live routes' denials (429), nothing else.
    expect(
      new Set(failedResponses.map((entry) => `${entry.split(' ')[0]} ${path(entry)}`)),
    ).toEqual(new Set(['400 /sandbox/simulate', '429 /sandbox/live/sliding-window-log']));
  });
});
