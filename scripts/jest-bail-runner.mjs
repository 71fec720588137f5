import TestRunner from 'jest-runner';

/**
 * The mutation suites' Jest runner (jest.mutation.config.js): the suites of a run go one after
 * another, and none is loaded once one has failed. A failing test kills the mutant; the suites
 * after it would only add their load time (hundreds of milliseconds of CPU for those that
 * import @nestjs/common) and their tests, none of which can change the outcome. Jest's own
 * `bail` ends the process, so Stryker turns it off.
 */
export default class BailRunner extends TestRunner {
  async runTests(tests, watcher, options) {
    let failed = false;
    const stopListening = this.on('test-file-success', ([, result]) => {
      if (result.numFailingTests > 0 || result.testExecError) failed = true;
    });
    try {
      for (const test of tests) {
        if (failed) break;
        await super.runTests([test], watcher, options);
      }
    } finally {
      stopListening();
    }
  }
}
