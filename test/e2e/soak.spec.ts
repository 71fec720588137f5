import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { SoakReport, SoakRound } from '../../bench/soak.js';

const execFileAsync = promisify(execFile);
const REQUESTS = 200_000;
/** Heap after a full GC may end at most this much above where it was after the first round. */
const HEAP_GROWTH_BOUND_BYTES = 4 * 1024 * 1024;

/**
 * 200,000 decisions with Redis faults between them, in a child process (`--expose-gc`, and
 * away from Jest's own timers and sockets): nothing may pile up.
 */
describe('long-running health', () => {
  let report: SoakReport;
  beforeAll(async () => {
    const soak = fileURLToPath(new URL('../../dist/bench/soak.js', import.meta.url));
    const { stdout } = await execFileAsync(
      process.execPath,
      ['--expose-gc', soak, '--requests', String(REQUESTS)],
      { timeout: 240_000, maxBuffer: 16 * 1024 * 1024 },
    );
    report = JSON.parse(stdout.trim().split('\n').at(-1)!) as SoakReport;
    const first = report.rounds[0];
    const last = report.rounds.at(-1)!;
    console.log(
      `soak: ${report.requests} decisions in ${report.rounds.length} rounds; heap after GC ` +
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
    const hurt = (round: SoakRound) => round.unavailable > 0;
    const faulted = rounds().filter((round) => round.fault && round.fault !== 'SCRIPT FLUSH');
    expect(faulted.length).toBeGreaterThanOrEqual(6);
    expect(faulted.filter((round) => !hurt(round))).toEqual([]);
    // SCRIPT FLUSH costs one reload: at most the decisions in flight (64) can miss the deadline.
    const flushes = rounds().filter((round) => round.fault === 'SCRIPT FLUSH');
    expect(flushes.filter((round) => round.unavailable > 64)).toEqual([]);
    expect(last()).toMatchObject({ fault: null, unavailable: 0 });
    expect(last().allowed).toBeGreaterThan(0);
    expect(last().denied).toBeGreaterThan(0);
  });

  it('keeps the heap, timers, sockets and listeners where they were', () => {
    expect(last().heapUsedBytes - first().heapUsedBytes).toBeLessThan(HEAP_GROWTH_BOUND_BYTES);
    // At most one more of any kind (a reconnect or a half-open probe may be pending).
    const grown = Object.entries(last().resources).filter(
      ([type, count]) => count > (first().resources[type] ?? 0) + 1,
    );
    expect(grown).toEqual([]);
    expect(last().clientListeners).toBe(first().clientListeners);
    expect(last().processListeners).toBe(first().processListeners);
  });
});
