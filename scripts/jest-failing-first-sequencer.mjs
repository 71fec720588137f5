import Sequencer from '@jest/test-sequencer';

/**
 * The order of the mutation suites in a run (jest.mutation.config.js), for the bail runner
 * (scripts/jest-bail-runner.mjs): first the suites that failed the last time they ran (a
 * runner's next mutant is usually the next one in the same file, and the suite that killed
 * the last is the likeliest to kill it), then the quickest. Jest's own order runs the slowest
 * first, to keep its workers busy to the end; here the first failure ends the run.
 */
export default class FailingFirstSequencer extends Sequencer {
  sort(tests) {
    for (const test of tests) test.duration = this.time(test);
    const rank = (test) => [this.hasFailed(test) ? 0 : 1, test.duration ?? Infinity];
    return tests.sort((a, b) => {
      const [failedA, durationA] = rank(a);
      const [failedB, durationB] = rank(b);
      return failedA - failedB || durationA - durationB;
    });
  }
}
