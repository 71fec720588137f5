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

/**
 * A store of two nodes, as a Cluster of two masters: keys of clients named `stalled-*` live
 * on a node that never answers, every other key on one that admits at once.
 */
function twoNodeStore(withNodes: boolean): RateLimitStore {
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

/**
 * As twoNodeStore, with a node that answers everything it was asked, its time included, once
 * `resume` is called; `probed` lists the nodes whose time was asked.
 */
function resumableNodeStore() {
  let resume!: () => void;
  const resumed = new Promise<void>((resolve) => (resume = resolve));
  const probed: string[] = [];
  const onNode = <T>(node: string, answer: () => T): Promise<T> =>
    node === 'a:1' ? resumed.then(answer) : Promise.resolve(answer());
  const store: RateLimitStore = {
    decide: (request) => onNode(nodeOf(request.keys), () => admitted(request)),
    reset: () => Promise.resolve(),
    close: () => Promise.resolve(),
    nodeOf,
    nodeTime: (node) => {
      probed.push(node);
      return onNode(node, () => Date.now());
    },
  };
  return { store, resume, probed };
}

const settled = (work: Promise<unknown>) =>
  work.then(
    () => 'ok',
    // The store's own error: the exception's message is the one a client may see.
    (error: Error) => ((error.cause as Error | undefined) ?? error).message,
  );

describe('a silence detector and a circuit breaker per node', () => {
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

  it("gives a stalled node's decisions up at the deadline while the other node answers", async () => {
    const limiter = new RateLimiter(
      resolveOptions({ failureMode: 'closed', timeout: 20, maxWait: 1_000, breaker: false }),
      twoNodeStore(true),
    );
    // The other node's answers, every 2 ms: signs of its life, not of the stalled one's.
    const others = setInterval(() => void limiter.consume('healthy', POLICY), 2);
    try {
      expect(await settled(limiter.consume('stalled-0', POLICY))).toMatch(
        /no answer within 20 ms \(store silent\)/,
      );
    } finally {
      clearInterval(others);
      await limiter.onApplicationShutdown();
    }
  });

  it("probes an open node's breaker in the background: the node's first answer closes it", async () => {
    const { store, resume, probed } = resumableNodeStore();
    const limiter = new RateLimiter(
      resolveOptions({
        failureMode: 'closed',
        timeout: 20,
        maxWait: 60,
        // No request probes it within the test.
        breaker: { failures: FAILURES, halfOpenAfter: 60_000 },
      }),
      store,
    );
    try {
      await Promise.all(
        Array.from({ length: FAILURES }, (_, i) =>
          settled(limiter.consume(`stalled-${i}`, POLICY)),
        ),
      );
      expect(await settled(limiter.consume('stalled-next', POLICY))).toMatch(
        /circuit breaker open/,
      );
      // Probes time out one after another while the node is stalled; none asks the other.
      const since = performance.now();
      while (probed.length < 3 && performance.now() - since < 1_000) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(new Set(probed)).toEqual(new Set(['a:1']));
      resume();
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(await settled(limiter.consume('stalled-after', POLICY))).toBe('ok');
    } finally {
      await limiter.onApplicationShutdown();
    }
  });
});
