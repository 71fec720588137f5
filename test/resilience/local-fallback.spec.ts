import { LocalFallback } from '../../lib/resilience/local-fallback.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { resolvePolicies } from '../../lib/config/resolved-policy.js';

const resolve = (policy: RateLimitPolicy) =>
  resolvePolicies([policy], { label: 'Shop.buy', routeId: 'Shop.buy', defaultScope: 'route' })[0];

/** The policy failureMode 'local' decides by: what each instance may admit on its own. */
describe('LocalFallback.share', () => {
  it("cuts a bucket's limit and burst to the instance's share, in the script's layout", () => {
    const bucket = resolve({ algorithm: 'token-bucket', limit: 10, burst: 25, window: '1m' });
    expect(new LocalFallback(3).share(bucket)).toMatchObject({
      limit: 3,
      burst: 8,
      maxCost: 8,
      windowMs: 60_000,
      scriptArgs: ['3', '60000', '8'],
    });
  });

  it("cuts a window's limit, which is its capacity, and never below 1", () => {
    const window = resolve({ algorithm: 'fixed-window', limit: 10, window: '1m' });
    expect(new LocalFallback(4).share(window)).toMatchObject({
      limit: 2,
      burst: 2,
      maxCost: 2,
      scriptArgs: ['2', '60000', '2'],
    });
    expect(new LocalFallback(40).share(window)).toMatchObject({ limit: 1, burst: 1, maxCost: 1 });
  });

  it('works a share out once per policy', () => {
    const fallback = new LocalFallback(2);
    const policy = resolve({ limit: 10, window: '1m' });
    expect(fallback.share(policy)).toBe(fallback.share(policy));
  });
});
