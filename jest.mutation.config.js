import base from './jest.config.js';

/**
 * The suites `npm run test:mutation` runs against each mutant of lib/ (stryker.config.mjs):
 * the unit tests and the algorithms' exact contracts on the embedded store. The contracts'
 * Redis half is left out: it covers no mutated file that the memory half does not, and
 * running it for every mutant of the policy code doubled the run.
 */
export default {
  ...base,
  testMatch: ['<rootDir>/test/unit/**/*.spec.ts', '<rootDir>/test/integration/algorithms.spec.ts'],
  testNamePattern: '^(?!redis store )',
  // A mutant that stalls a promise fails its test here, instead of timing out the runner.
  testTimeout: 5_000,
};
