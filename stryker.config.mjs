/**
 * `npm run test:mutation`: StrykerJS mutates the library's TypeScript and runs, for each
 * mutant, only the tests that cover it (perTest coverage). Not part of `npm test`.
 * Results and surviving mutants: docs/mutation.md.
 * @type {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export default {
  testRunner: 'jest',
  jest: { configFile: 'jest.mutation.config.js' },
  // Jest runs the sources as native ESM.
  testRunnerNodeArgs: ['--experimental-vm-modules'],
  coverageAnalysis: 'perTest',
  // The embedded store, policy and option resolution, headers, keys, the deadline and the
  // guard's route planning: the TypeScript that unit-level tests can hold. The Lua side is
  // held by the differential and Redis integration tests instead (docs/mutation.md).
  mutate: [
    'lib/stores/memory.store.ts',
    'lib/stores/memory/*.ts',
    'lib/resolved-policy.ts',
    'lib/rate-limit-headers.ts',
    'lib/client-key.ts',
    'lib/window.ts',
    'lib/deadline.ts',
    'lib/route-planner.ts',
    'lib/resolved-options.ts',
  ],
  concurrency: 2,
  // On top of 1.5x the covering tests' own time and the runner's measured overhead: a busy
  // machine can stall a run for seconds, and a spurious timeout would count as a kill, but
  // every timeout also costs a runner restart (docs/mutation.md lists the timed-out mutants).
  timeoutMS: 10_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: '.tmp/mutation/index.html' },
  jsonReporter: { fileName: '.tmp/mutation/mutation.json' },
  tempDirName: '.tmp/stryker',
  // Reports and other runs' sandboxes stay out of the sandbox.
  ignorePatterns: ['/.tmp', '/dist'],
  thresholds: { high: 90, low: 85, break: 85 },
};
