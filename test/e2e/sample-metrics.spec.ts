import type { RedisServer } from '../support/redis-server.js';
import { type RunningSample, startSample } from '../support/sample-app.js';
import { type RunningApp, sequentially } from '../support/test-app.js';

/** The sample app as `METRICS=1 npm start` runs it, on the test's own Redis. */
describe('sample app with METRICS=1', () => {
  let sample: RunningSample;
  let server: RedisServer;
  let running: RunningApp;

  beforeAll(async () => {
    sample = await startSample({ METRICS: '1' });
    ({ server, running } = sample);
  });
  afterAll(() => sample.stop());

  const scrape = async () => {
    const response = await running.get('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };
  /** The value of the one sample of `name` whose labels include all of `labels`. */
  const valueOf = (text: string, name: string, labels: Record<string, string>) => {
    const lines = text
      .split('\n')
      .filter(
        (line) =>
          line.startsWith(`${name}{`) &&
          Object.entries(labels).every(([label, value]) => line.includes(`${label}="${value}"`)),
      );
    expect(lines).toHaveLength(1);
    return Number(lines[0].split(' ').at(-1));
  };
  const decisions = (text: string, outcome: string, route = 'DemoController.slidingLog') =>
    valueOf(text, 'rate_limiting_decisions_total', {
      rate_limiting_route: route,
      rate_limiting_policy: 'default',
      rate_limiting_outcome: outcome,
    });

  it('serves the counts in Prometheus text at /metrics, itself never limited', async () => {
    // A sliding log: a fixed window could roll over mid-test.
    expect(await sequentially(7, () => running.get('/sliding-log'))).toEqual([
      200, 200, 200, 200, 200, 429, 429,
    ]);
    const text = await scrape();
    expect(text).toContain('# TYPE rate_limiting_decisions_total counter');
    expect(text).toContain('# TYPE rate_limiting_store_operation_duration histogram');
    expect(decisions(text, 'allowed')).toBe(5);
    expect(decisions(text, 'denied')).toBe(1);
    expect(decisions(text, 'denied_cached')).toBe(1);
    // 5 of 5 leave 4, 3, 2, 1, 0: the last two within 20%.
    expect(
      valueOf(text, 'rate_limiting_near_limit_decisions_total', {
        rate_limiting_route: 'DemoController.slidingLog',
      }),
    ).toBe(2);
    expect(valueOf(text, 'rate_limiting_store_operation_duration_count', {})).toBe(6);
    // Scraping is not rate limited, so it is not counted either.
    expect(await scrape()).not.toContain('MetricsController');
  });

  it('counts the requests it lets through while Redis is down, and why', async () => {
    await server.kill();
    // A route this client has not spent: a known denial would be answered without Redis.
    expect(await sequentially(2, () => running.get('/sliding-counter'))).toEqual([200, 200]);
    const text = await scrape();
    expect(decisions(text, 'failed_open', 'DemoController.slidingCounter')).toBe(2);
    expect(
      valueOf(text, 'rate_limiting_store_failures_total', { error_type: 'disconnected' }),
    ).toBe(2);
  });
});
