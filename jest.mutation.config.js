import base from './jest.config.js';

/**
 * The suites `npm run test:mutation` runs against each mutant of lib/ (stryker.config.mjs).
 * Stryker runs, for a mutant, the tests that covered it, but Jest must still load every test
 * file that imports the mutated file, even when none of its tests is picked; so only suites
 * that import what they test are listed. Left out: the specs that boot RateLimitModule or
 * import lib/index.js (guard/route-planner.app, guard/transports, limiter/deny-cache), which
 * would tie every mutant to a Nest start-up (test/guard/route-planner.spec.ts holds the planner
 * without it), and the algorithms' Redis half, which covers no mutated file the memory half
 * does not.
 */
export default {
  ...base,
  testMatch: [
    ...[
      'guard/client-ip',
      'stores/store-keys',
      'resilience/deadline',
      'guard/decision-reporter',
      'guard/denial-responses',
      'stores/memory/memory-algorithms',
      'stores/memory/memory.store',
      'observability/rate-limit-metrics',
      'config/metrics-option',
      'resilience/store-failure-kind',
      'config/resolved-policy',
      'guard/rate-limit-headers',
      'guard/request-limits',
      'config/resolved-options',
      'guard/route-planner',
      'config/window',
      'stores/algorithms',
    ].map((name) => `<rootDir>/test/${name}.spec.ts`),
  ],
  testNamePattern: '^(?!(redis|ioredis 5|iovalkey|node-redis \\d) store |on valkey )',
  // One failure kills the mutant: the rest of a file's tests are skipped once one fails, and
  // the rest of the suites are not loaded; the suites likeliest to fail, then the quickest, go first.
  testEnvironment: `${import.meta.dirname}/scripts/jest-bail-environment.mjs`,
  runner: `${import.meta.dirname}/scripts/jest-bail-runner.mjs`,
  testSequencer: `${import.meta.dirname}/scripts/jest-failing-first-sequencer.mjs`,
  // A mutant that stalls a promise fails its test here, instead of timing out the runner:
  // six times the slowest of these tests (250 ms), each mutant's hanging tests one after another.
  testTimeout: 1_500,
};
