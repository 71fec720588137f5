import { Logger } from '@nestjs/common';
import { resolveOptions } from '../../lib/config/resolved-options.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import type {
  DecideRequest,
  RateLimitStore,
  StoreDecision,
} from '../../lib/interfaces/rate-limit-store.interface.js';
import { RateLimiter } from '../../lib/limiter/rate-limiter.service.js';

const POLICY: RateLimitPolicy = { algorithm: 'fixed-window', limit: 100, window: '1h' };
const FAILURES = 3;

/**
 * A store of two nodes, as a Cluster of two masters: keys of clients named `stalled-*` live
 * on a node that never answers, every other key on one that admits at once.
 */
function twoNodeStore(withNodes: boolean): RateLimitStore {
  const nodeOf = (keys: readonly string[]) => (keys[0].includes('{stalled') ? 'a:1' : 'b:1');
  const admitted = (request: DecideRequest): StoreDecision => ({
    allowed: true,
    verdicts: request.policies.map(() => ({
      allowed: true,
      remaining: 99,
      resetMs: 1_000,
      retryAfterMs: 0,
      delayMs: 0,
    })),
  });
  return {
    decide: (request) =>
      nodeOf(request.keys) === 'a:1'
        ? new Promise<never>(() => undefined)
        : Promise.resolve(admitted(request)),
    reset: () => Promise.resolve(),
    close: () => Promise.resolve(),
    ...(withNodes && { nodeOf }),
  };
}

const settled = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    (error: Error) => error.message,
  );

describe('a circuit breaker per node', () => {
  beforeAll(() => Logger.overrideLogger(false));

  /** Opens the stalled node's breaker (or the store's), then asks once on each node. */
  async function afterStalledNodeFailed(store: RateLimitStore) {
    const limiter = new RateLimiter(
      resolveOptions({
        failureMode: 'closed',
        timeout: 20,
        maxWait: 60,
        breaker: { failures: FAILURES, halfOpenAfter: 60_000 },
      }),
      store,
    );
    try {
      // In flight together, as a client's concurrent requests: their deadlines end together.
      const stalled = await Promise.all(
        Array.from({ length: FAILURES }, (_, i) =>
          settled(limiter.consume(`stalled-${i}`, POLICY)),
        ),
      );
      expect(stalled.every((outcome) => /no answer within/.test(outcome))).toBe(true);
      return {
        stalled: await settled(limiter.consume('stalled-next', POLICY)),
        healthy: await settled(limiter.consume('healthy', POLICY)),
      };
    } finally {
      await limiter.onApplicationShutdown();
    }
  }

  it("a silent node opens its own: the other node's keys are decided as before", async () => {
    expect(await afterStalledNodeFailed(twoNodeStore(true))).toEqual({
      stalled: expect.stringMatching(/circuit breaker open/),
      healthy: 'ok',
    });
  });

  it('a store that names no nodes has one breaker, which refuses every key', async () => {
    expect(await afterStalledNodeFailed(twoNodeStore(false))).toEqual({
      stalled: expect.stringMatching(/circuit breaker open/),
      healthy: expect.stringMatching(/circuit breaker open/),
    });
  });
});
