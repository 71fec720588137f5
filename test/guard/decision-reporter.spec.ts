import { type ExecutionContext, Logger } from '@nestjs/common';
import { DecisionReporter } from '../../lib/guard/decision-reporter.js';
import type { RateLimitMetrics } from '../../lib/observability/rate-limit-metrics.js';
import { RateLimitUnavailableException } from '../../lib/rate-limit.exceptions.js';
import type {
  PolicyResult,
  RateLimitDecision,
} from '../../lib/interfaces/rate-limit-decision.interface.js';
import type { RateLimitDecisionEvent } from '../../lib/interfaces/rate-limit-event.interface.js';
import type { ResolvedRateLimitOptions } from '../../lib/config/resolved-options.js';
import type { FailureMode } from '../../lib/interfaces/rate-limit-policy.interface.js';
import type { RoutePlan } from '../../lib/guard/route-planner.js';

const CONTEXT = { getType: () => 'http' } as unknown as ExecutionContext;
const KEYS = ['client:a', 'client:s'];

/** A route with an enforced policy and a shadow one: what the reporter reads of a plan. */
const planOf = (failureMode: FailureMode = 'open') =>
  ({
    route: 'ReportsController.list',
    failureMode,
    policies: [
      { name: 'enforced', shadow: false },
      { name: 'trial', shadow: true },
    ],
  }) as unknown as RoutePlan;

const result = (allowed: boolean, delayMs = 0): PolicyResult => ({
  policy: 'p',
  allowed,
  limit: 5,
  window: 60_000,
  capacity: 5,
  remaining: allowed ? 1 : 0,
  resetMs: 1_000,
  retryAfterMs: allowed ? 0 : 1_000,
  delayMs,
});

/** A Logger whose warnings are kept. */
function recordingLogger(): { logger: Logger; warnings: string[] } {
  const warnings: string[] = [];
  const logger = new Logger('test');
  logger.warn = (message: unknown) => void warnings.push(String(message));
  return { logger, warnings };
}

/** The options the reporter reads, as resolved. */
const optionsOf = ({
  dryRun = false,
  onDecision,
  metrics,
}: Partial<Pick<ResolvedRateLimitOptions, 'dryRun' | 'onDecision' | 'metrics'>>) =>
  ({ dryRun, onDecision, metrics }) as ResolvedRateLimitOptions;

/** A reporter over the given options, and what its hook and metrics were told. */
function reporterFor(options: Parameters<typeof optionsOf>[0] = {}, hook = true) {
  const events: RateLimitDecisionEvent[] = [];
  const measured: string[] = [];
  const { logger, warnings } = recordingLogger();
  const reporter = new DecisionReporter(
    optionsOf({
      ...options,
      onDecision: hook ? (event) => void events.push(event) : undefined,
      metrics: {
        decided: (_: RoutePlan, outcome: string) => measured.push(outcome),
      } as unknown as RateLimitMetrics,
    }),
    logger,
  );
  return { reporter, events, measured, warnings };
}

describe('DecisionReporter', () => {
  it.each<[string, string, Parameters<typeof optionsOf>[0], RateLimitDecision]>([
    [
      'an admitted request',
      'allowed',
      {},
      { allowed: true, results: [result(true), result(true)] },
    ],
    [
      'one admitted after a wait',
      'delayed',
      {},
      { allowed: true, results: [result(true, 30), result(true)] },
    ],
    ['a denial', 'denied', {}, { allowed: false, results: [result(false), result(true)] }],
    [
      "a denial from this pod's deny cache",
      'denied_cached',
      {},
      { allowed: false, results: [result(false), result(true)], cached: true },
    ],
    [
      'a denial under dryRun',
      'dry_run_denied',
      { dryRun: true },
      { allowed: false, results: [result(false), result(true)], cached: true },
    ],
  ])('reports %s as %s to the hook and the metrics', (_, outcome, options, decision) => {
    const { reporter, events, measured, warnings } = reporterFor(options);
    reporter.report(CONTEXT, planOf(), KEYS, decision);
    expect(measured).toEqual([outcome]);
    // The hook returned nothing, and nothing is complained of.
    expect(warnings).toEqual([]);
    expect(events).toHaveLength(1);
    const [event] = events;
    expect(event).toEqual({
      outcome,
      route: 'ReportsController.list',
      policies: ['enforced', 'trial'],
      // The shadow policy's own verdict, whatever the request's outcome.
      outcomes: [outcome, 'allowed'],
      keys: KEYS,
      results: decision.results,
      context: CONTEXT,
    });
    expect('error' in event).toBe(false);
  });

  it('reports a shadow policy that would have denied as shadow_denied', () => {
    const { reporter, events } = reporterFor();
    reporter.report(CONTEXT, planOf(), KEYS, {
      allowed: true,
      results: [result(true), result(false)],
    });
    expect(events[0].outcomes).toEqual(['allowed', 'shadow_denied']);
  });

  it.each([
    ['open', 'failed_open'],
    ['closed', 'failed_closed'],
  ] as const)(
    'reports a store failure on a route whose failureMode is %s as %s, with the error',
    (failureMode, outcome) => {
      const { reporter, events, measured } = reporterFor({});
      const error = new RateLimitUnavailableException('store down', 1);
      reporter.report(CONTEXT, planOf(failureMode), KEYS, undefined, error);
      expect(measured).toEqual([outcome]);
      expect(events[0]).toMatchObject({ outcome, outcomes: [outcome, outcome], results: [] });
      expect(events[0].error).toBe(error);
    },
  );

  it('tells the metrics without a hook', () => {
    const { reporter, measured } = reporterFor({}, false);
    reporter.report(CONTEXT, planOf(), KEYS, { allowed: true, results: [result(true)] });
    expect(measured).toEqual(['allowed']);
  });

  it('logs what the hook throws or rejects with, at most every 5 s, and the request goes on', async () => {
    const { logger, warnings } = recordingLogger();
    const failing = [
      () => {
        throw new Error('hook bug');
      },
      () => Promise.reject('not an Error'),
    ];
    for (const hook of failing) {
      const reporter = new DecisionReporter(optionsOf({ onDecision: hook }), logger);
      const decision = { allowed: true, results: [result(true), result(true)] };
      expect(() => reporter.report(CONTEXT, planOf(), KEYS, decision)).not.toThrow();
      // Within 5 s of the first, a second failure of one reporter is held back.
      reporter.report(CONTEXT, planOf(), KEYS, decision);
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).toEqual([
      'onDecision hook failed on ReportsController.list: hook bug; the request went on',
      'onDecision hook failed on ReportsController.list: not an Error; the request went on',
    ]);
  });
});
