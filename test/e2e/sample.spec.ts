import type { RedisServer } from '../support/redis-server.js';
import { type RunningSample, startSample } from '../support/sample-app.js';
import type { RunningApp } from '../support/test-app.js';

/** The sample app as `npm start` runs it, on the test's own Redis. */
describe('sample app', () => {
  let sample: RunningSample;
  let server: RedisServer;
  let running: RunningApp;

  beforeAll(async () => {
    sample = await startSample();
    ({ server, running } = sample);
  });
  afterAll(() => sample.stop());

  it('answers 429 with RateLimit headers and Retry-After once a route is spent', async () => {
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 6; i++) {
      last = await running.get('/sliding-log');
      statuses.push(last.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(last!.headers.get('ratelimit-policy')).toBe('"default";q=5;w=10');
    expect(last!.headers.get('ratelimit')).toMatch(/^"default";r=0;t=(9|10)$/);
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(9);
  });

  it("advertises /search's token bucket by its burst, so r never exceeds q", async () => {
    const response = await running.get('/search');
    expect(response.headers.get('ratelimit-policy')).toBe('"burst";q=5;w=3, "hourly";q=50;w=3600');
    expect(response.headers.get('ratelimit')).toMatch(/^"burst";r=4;t=1, "hourly";r=49;t=\d+$/);
  });

  it('keeps /health out of limiting and charges /report by pages', async () => {
    for (let i = 0; i < 8; i++) expect((await running.get('/health')).status).toBe(200);
    expect((await running.get('/health')).headers.get('ratelimit')).toBeNull();
    expect((await running.get('/report?pages=15')).headers.get('ratelimit')).toMatch(
      /^"pages";r=5;/,
    );
    expect((await running.get('/report?pages=6')).status).toBe(429);
  });

  it("serves its OpenAPI document at /docs, with the limiter's 429 on limited routes and none on /health", async () => {
    const page = await running.get('/docs');
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/swagger-ui/);
    const document = (await (await running.get('/docs-json')).json()) as {
      paths: Record<string, { get: { responses: Record<string, unknown> } }>;
    };
    expect(Object.keys(document.paths['/sliding-log'].get.responses).sort()).toEqual([
      '200',
      '429',
    ]);
    expect(Object.keys(document.paths['/hello'].get.responses).sort()).toEqual(['200', '429']);
    expect(Object.keys(document.paths['/health'].get.responses)).toEqual(['200']);
  });

  it('serves no /metrics without METRICS=1', async () => {
    expect((await running.get('/metrics')).status).toBe(404);
  });

  it('sandbox pods: exact and leased runs both admit the limit, leased with fewer store calls', async () => {
    const response = await fetch(`${running.url}/sandbox/pods`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pods: 6, lease: 10, limit: 500, requests: 1_500 }),
    });
    expect(response.status).toBe(200);
    const { exact, leased } = (await response.json()) as Record<
      'exact' | 'leased',
      { admitted: number; denied: number; storeCalls: number }
    >;
    expect(exact).toMatchObject({ admitted: 500, denied: 1_000 });
    expect(leased).toMatchObject({ admitted: 500, denied: 1_000 });
    expect(exact.storeCalls).toBeGreaterThanOrEqual(500);
    // 50 calls for full leases at most, more as they shrink, far fewer than 500.
    expect(leased.storeCalls).toBeLessThan(200);
    const refused = await fetch(`${running.url}/sandbox/pods`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pods: 6, lease: 600, limit: 500, requests: 10 }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toBe(
      'lease must be a whole number from 1 to 500',
    );
  });

  it('keeps answering 200 within the deadline when Redis dies (fail-open)', async () => {
    await server.kill();
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      expect((await running.get('/fixed-window')).status).toBe(200);
      expect(performance.now() - started).toBeLessThan(1_500);
    }
  });
});
