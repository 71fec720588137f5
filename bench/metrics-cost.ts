/**
 * What the `metrics` option adds to each request, in CPU time of this process alone (no
 * HTTP, no Redis): what the guard does for a decision (DecisionReporter.report: outcome,
 * tallies, near-limit check), for allowed and denied decisions of a route of one policy and
 * of two, and what the store gate does for a store call (the latency histogram), with the
 * OpenTelemetry SDK's MeterProvider read by the Prometheus exporter, against an empty call
 * (what runs without metrics). Rounds interleaved, medians reported.
 *
 *   npm run bench:metrics   (METRICS_COST_CALLS, METRICS_COST_ROUNDS)
 */
import { type ExecutionContext, Logger } from '@nestjs/common';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { DecisionReporter } from '../lib/guard/decision-reporter.js';
import type { RateLimitDecision } from '../lib/interfaces/rate-limit-decision.interface.js';
import { resolveOptions } from '../lib/config/resolved-options.js';
import { resolvePolicies } from '../lib/config/resolved-policy.js';
import type { RoutePlan } from '../lib/guard/route-planner.js';

const CALLS = Number(process.env.METRICS_COST_CALLS ?? 300_000);
const ROUNDS = Number(process.env.METRICS_COST_ROUNDS ?? 5);

const meterProvider = new MeterProvider({
  readers: [new PrometheusExporter({ preventServerStart: true })],
});
const metered = resolveOptions({ metrics: { meterProvider } });
const reporter = new DecisionReporter(metered, new Logger('bench'));
const { metrics } = metered;

const planOf = (count: number): RoutePlan => {
  const policies = resolvePolicies(
    Array.from({ length: count }, (_, i) => ({ name: `p${i}`, limit: 1_000, window: '1m' })),
    { label: 'Bench.route', routeId: 'Bench.route', defaultScope: 'route' },
  );
  return { route: `Bench.route${count}`, policies } as unknown as RoutePlan;
};
const decisionOf = (count: number, allowed: boolean): RateLimitDecision => ({
  allowed,
  results: Array.from({ length: count }, (_, i) => ({
    policy: `p${i}`,
    allowed: allowed || i > 0,
    limit: 1_000,
    window: 60_000,
    capacity: 1_000,
    remaining: allowed ? 500 : 0,
    resetMs: 1_000,
    retryAfterMs: allowed ? 0 : 1_000,
    delayMs: 0,
  })),
});

const context = {} as ExecutionContext;
/** CPU µs per call of `body`, over CALLS calls. */
function cpuPerCall(body: () => void): number {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) body();
  const { user, system } = process.cpuUsage(before);
  return (user + system) / CALLS;
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const cases = [1, 2].flatMap((count) =>
  [true, false].map((allowed) => {
    const plan = planOf(count);
    const decision = decisionOf(count, allowed);
    const keys = plan.policies.map(() => 'client');
    return {
      name: `${count} ${count === 1 ? 'policy' : 'policies'}, ${allowed ? 'allowed' : 'denied'}`,
      decision: () => reporter.report(context, plan, keys, decision),
    };
  }),
);
const storeCall = () => metrics!.storeAnswered(performance.now() - 0.3);
// Without metrics the guard creates no reporter and the gate calls nothing: an empty body.
const nothing = () => undefined;

const samples = new Map<string, number[]>();
const sample = (name: string, body: () => void) => {
  const cost = cpuPerCall(body) - cpuPerCall(nothing);
  samples.set(name, [...(samples.get(name) ?? []), cost]);
};
// Round 0 warms the JIT up and is not counted.
for (let round = 0; round <= ROUNDS; round++) {
  for (const { name, decision } of cases) sample(`decision: ${name}`, decision);
  sample('store call answered (histogram)', storeCall);
  if (round === 0) samples.clear();
}
console.log('| what the metrics option adds | CPU µs per call (median) |\n|---|---|');
for (const [name, costs] of samples) console.log(`| ${name} | ${median(costs).toFixed(3)} |`);
