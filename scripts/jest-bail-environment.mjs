import { TestEnvironment } from 'jest-environment-node';

/**
 * The mutation suites' test environment (jest.mutation.config.js): once a test of the file
 * fails, the file's remaining tests are skipped. One failing test kills a mutant, and Jest
 * has no such bail of its own: without it, a mutant that stalls the deadline's timer made
 * each of the 36 tests waiting on it run to its timeout, and the whole mutant to Stryker's,
 * which restarts the runner.
 */
export default class BailEnvironment extends TestEnvironment {
  failed = false;

  async handleTestEvent(event) {
    if (event.name === 'test_done' && event.test.errors.length > 0) this.failed = true;
    else if (event.name === 'test_start' && this.failed) event.test.mode = 'skip';
  }
}
