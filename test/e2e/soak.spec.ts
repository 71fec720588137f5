import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { SoakReport } from '../support/soak.js';

const execFileAsync = promisify(execFile);
const REQUESTS = 200_000;
/** Heap after a full GC may end at most this much above where it was after the first round. */
const HEAP_GROWTH_BOUND_BYTES = 4 * 1024 * 1024;

/**
 * 200,000 decisions with Redis faults between them, in a child process (`--expose-gc`, and
 * away from Jest's own timers and sockets): nothing may pile up.
 */
describe.each(['open', 'local'])('long-running health, failureMode %s', (failureMode) => {
  let report: SoakReport;
  beforeAll(async () => {
    const soak = fileURLToPath(new URL('../../dist/test/support/soak.js', import.meta.url));
    const { stdout } = await execFileAsync(
      process.execPath,
      ['--expose-gc', soak, '--requests', String(REQUESTS), '--failure-mode', failureMode],
      { timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    report = JSON.parse(stdout.trim().split('\n').at(-1)!) as SoakReport;
    const first = report.rounds[0];
    const last = report.rounds.at(-1)!;
    console.log(
      `soak (${failureMode}): ${report.requests} decisions in ${report.rounds.length} rounds; heap after GC ` +
        `${(first.heapUsedBytes / 1e6).toFixed(1)} MB after the first round, ` +
        `${(last.heapUsedBytes / 1e6).toFixed(1)} MB after the last; resources ` +
        `${JSON.stringify(first.resources)} then ${JSON.stringify(last.resources)}`,
    );
  }, 250_000);

  const rounds = () => report.rounds;
  const first = () => report.rounds[0];
  const last = () => report.rounds.at(-1)!;

  it('decided them all, with no unhandled rejection and no unexpected error', () => {
    expect(report.requests).toBeGreaterThanOrEqual(REQUESTS);
    expect(report.unhandledRejections).toEqual([]);
    expect(report.unexpectedErrors).toEqual([]);
  });

  it('went through real faults, and limits correctly after the last', () => {
    const named = (name: string) => rounds().filter((round) => round.fault === name);
    const failing = [...named('killed and restarted'), ...named('out of memory')];
    expect(failing.length).toBeGreaterThanOrEqual(3);
    if (failureMode === 'local') {
      // Every decision is made, by Redis or, while it is unavailable, in the process.
      expect(rounds().filter((round) => round.unavailable > 0)).toEqual([]);
    } else {
      // A dead or full Redis fails decisions; a stall this short may be waited out (maxWait).
      expect(failing.filter((round) => round.unavailable === 0)).toEqual([]);
    }
    // SCRIPT FLUSH costs one reload, never a failed decision.
    expect(named('SCRIPT FLUSH').filter((round) => round.unavailable > 0)).toEqual([]);
    expect(last()).toMatchObject({ fault: null, unavailable: 0 });
    expect(last().allowed).toBeGreaterThan(0);
    expect(last().denied).toBeGreaterThan(0);
  });

  it('keeps the heap, timers, sockets and listeners where they were', () => {
    expect(last().heapUsedBytes - first().heapUsedBytes).toBeLessThan(HEAP_GROWTH_BOUND_BYTES);
    // At most one more of any kind: a reconnect or a half-open probe may be pending, and a
    // connection attempt holds a 'ready' and a 'close' listener on the client until it ends.
    const grown = (before: Record<string, number>, after: Record<string, number>) =>
      Object.entries(after).filter(([name, count]) => count > (before[name] ?? 0) + 1);
    expect(grown(first().resources, last().resources)).toEqual([]);
    expect(grown(first().clientListeners, last().clientListeners)).toEqual([]);
    expect(last().processListeners).toEqual(first().processListeners);
  });
});
