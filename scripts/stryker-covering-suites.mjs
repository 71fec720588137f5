import { readFileSync, writeFileSync } from 'node:fs';
import {
  commonTokens,
  declareFactoryPlugin,
  PluginKind,
  tokens,
} from '@stryker-mutator/api/plugin';
import { strykerPlugins as jestPlugins } from '@stryker-mutator/jest-runner';

/**
 * Where the initial run leaves each test's suites for the other runner processes, which
 * share its sandbox (their working directory) but not its memory.
 */
const SUITES_FILE = '.stryker-test-suites.json';

/**
 * Stryker's Jest runner, loading for each mutant only the suites whose tests cover it.
 * The stock runner picks the covering tests by name, but Jest still loads every suite that
 * imports the mutated file, however indirectly: most of a mutant's time here went into
 * loading suites none of whose tests were to run. The initial run tells which suite each
 * test is in; a mutant without a test filter (a static one) runs as the stock runner does.
 */
function coveringSuitesRunner(injector) {
  const runner = jestPlugins[0].factory(injector);
  /** Test id to the suites holding a test of that name. */
  let suitesOf;
  let covering;

  const dryRun = runner.dryRun.bind(runner);
  runner.dryRun = async (options) => {
    const result = await dryRun(options);
    const found = {};
    for (const test of result.tests ?? []) (found[test.id] ??= []).push(test.fileName);
    writeFileSync(SUITES_FILE, JSON.stringify(found));
    return result;
  };

  const mutantRun = runner.mutantRun.bind(runner);
  runner.mutantRun = async (options) => {
    covering = options.testFilter;
    try {
      return await mutantRun(options);
    } finally {
      covering = undefined;
    }
  };

  // mutantRun hands its Jest settings to run(); given test files, the adapter runs those
  // instead of finding the suites related to the mutated file.
  const run = runner.run.bind(runner);
  runner.run = (settings) => {
    if (!covering) return run(settings);
    suitesOf ??= JSON.parse(readFileSync(SUITES_FILE, 'utf8'));
    const suites = new Set(covering.flatMap((id) => suitesOf[id] ?? []));
    if (!suites.size) return run(settings);
    return run({ ...settings, testFiles: [...suites].map(exactPath) });
  };
  return runner;
}
coveringSuitesRunner.inject = tokens(commonTokens.injector);

/** Jest reads test paths on its command line as patterns. */
const exactPath = (path) => `^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;

export const strykerPlugins = [
  declareFactoryPlugin(PluginKind.TestRunner, 'jest-covering-suites', coveringSuitesRunner),
];
