/**
 * `npm run test:mutation`: StrykerJS mutates the library's TypeScript and runs, for each
 * mutant, only the tests that cover it (perTest coverage). Not part of `npm test`.
 * Results and surviving mutants: docs/mutation.md.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  // Stryker's Jest runner, loading only the suites whose tests cover the mutant.
  plugins: ['@stryker-mutator/jest-runner', './scripts/stryker-covering-suites.mjs'],
  testRunner: 'jest-covering-suites',
  jest: { configFile: 'jest.mutation.config.js' },
  // Jest runs the sources as native ESM.
  testRunnerNodeArgs: ['--experimental-vm-modules'],
  coverageAnalysis: 'perTest',
  // The embedded store, policy, option and per-request limit resolution, headers, keys, the
  // deadline, the guard's route planning, its decision reports, denial bodies and metrics:
  // the TypeScript that unit-level tests can hold. The Lua side is
  // held by the differential and Redis integration tests instead (docs/mutation.md).
  mutate: [
    'lib/stores/memory/*.ts',
    'lib/config/resolved-policy.ts',
    'lib/guard/rate-limit-headers.ts',
    'lib/stores/store-keys.ts',
    'lib/guard/client-ip.ts',
    'lib/config/window.ts',
    'lib/resilience/deadline.ts',
    'lib/guard/route-planner.ts',
    'lib/config/resolved-options.ts',
    'lib/guard/request-limits.ts',
    'lib/observability/rate-limit-metrics.ts',
    'lib/config/metrics-option.ts',
    'lib/resilience/store-failure-kind.ts',
    'lib/guard/decision-reporter.ts',
    'lib/guard/denial-responses.ts',
  ],
  concurrency: 2,
  // Each Jest run leaves its ESM modules behind (some megabytes of heap a mutant): a runner
  // kept for the whole run grew to 3 GB, near Node's heap limit, where garbage collection
  // takes ever more of its time. A fresh runner costs about a second of start-up.
  maxTestRunnerReuse: 50,
  // Stryker's limit for a mutant is 1.5x its covering tests' time, plus the initial run's
  // overhead (loading every suite, seconds), plus this. A hanging test fails on its own at
  // Jest's testTimeout (jest.mutation.config.js) well before that; a timeout here kills and
  // restarts the runner, the costliest outcome of a mutant.
  timeoutMS: 3_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.tmp/mutation/index.html' },
  jsonReporter: { fileName: '.tmp/mutation/mutation.json' },
  tempDirName: '.tmp/stryker',
  // Reports and other runs' sandboxes stay out of the sandbox.
  ignorePatterns: ['/.tmp', '/dist'],
  thresholds: { high: 90, low: 85, break: 85 },
};
