/**
 * How far the sliding window counter strays from an exact sliding window: replays one
 * synthetic trace (many clients, Poisson and bursty arrivals) through the library's
 * RateLimiter on its embedded store, on a virtual clock, with a sliding window counter and
 * a sliding window log side by side, and compares every decision two ways:
 * - against the counter's own history: would an exact sliding window, given what the
 *   counter had admitted so far, have decided the same? This isolates the approximation.
 * - against the exact log run independently on the same trace: which requests a user
 *   sees pass differs, even where both admit the same number per window.
 * Options: --clients, --windows (trace length), --limit, --seed.
 */
import 'reflect-metadata';
import { parseArgs } from 'node:util';
import { NestFactory } from '@nestjs/core';
import { RateLimiter, RateLimitModule, type RateLimitPolicy } from '../lib/index.js';
import { seededRandom } from '../test/support/seeded-random.js';

const { values: options } = parseArgs({
  options: {
    clients: { type: 'string', default: '1000' },
    windows: { type: 'string', default: '10' },
    limit: { type: 'string', default: '100' },
    seed: { type: 'string', default: '42' },
  },
});
const CLIENTS = Number(options.clients);
const LIMIT = Number(options.limit);
const WINDOW_MS = 60_000;
const DURATION_MS = Number(options.windows) * WINDOW_MS;
/** Not aligned to the window, like real time. */
const TRACE_START_MS = 1_700_000_012_345;
/** Share of clients that send bursts; the others arrive as Poisson processes. */
const BURSTY_SHARE = 0.3;

const TRAFFIC = {
  light: 'Poisson, 0.01× to 0.3× the limit',
  under: 'Poisson, 0.3× to 1× the limit',
  over: 'Poisson, 1× to 3× the limit',
  bursty: 'bursts of 0.5× to 2× the limit',
} as const;
type Traffic = keyof typeof TRAFFIC;

const random = seededRandom(Number(options.seed));
const exponential = (meanMs: number): number => -Math.log(1 - random()) * meanMs;
const between = (low: number, high: number): number => low + random() * (high - low);

interface Client {
  readonly traffic: Traffic;
  /** Arrival times, ms from the trace start. */
  readonly arrivals: number[];
}

/** A steady client sending 0.01 to 3 times the limit per window on average (log-uniform). */
function poissonClient(): Client {
  const load = Math.exp(between(Math.log(0.01), Math.log(3)));
  const meanGapMs = WINDOW_MS / (LIMIT * load);
  const arrivals: number[] = [];
  for (let at = exponential(meanGapMs); at < DURATION_MS; at += exponential(meanGapMs)) {
    arrivals.push(at);
  }
  return { traffic: load < 0.3 ? 'light' : load <= 1 ? 'under' : 'over', arrivals };
}

/**
 * An on-off client: bursts of half to twice the limit, ~20 ms apart, after quiet spells of
 * 1.5 windows on average. A burst late in one window is what the counter's assumption of
 * an evenly spread previous window gets most wrong.
 */
function burstyClient(): Client {
  const arrivals: number[] = [];
  for (let at = exponential(1.5 * WINDOW_MS); at < DURATION_MS;) {
    const size = Math.round(between(0.5, 2) * LIMIT);
    for (let i = 0; i < size && at < DURATION_MS; i++, at += exponential(20)) arrivals.push(at);
    at += exponential(1.5 * WINDOW_MS);
  }
  return { traffic: 'bursty', arrivals };
}

interface Tally {
  clients: number;
  decisions: number;
  /** Counter admitted, though its own admissions already filled the exact window. */
  overHistory: number;
  /** Counter denied, though its own admissions left room in the exact window. */
  underHistory: number;
  /** Counter admitted what the independent log denied, and the reverse. */
  admittedLogDenied: number;
  deniedLogAdmitted: number;
  /** Most requests admitted to one client in any window (t - window, t]. */
  busiestCounter: number;
  busiestLog: number;
}

/** The most of these sorted times that fall within any window (t - WINDOW_MS, t]. */
function busiestWindow(times: readonly number[]): number {
  let busiest = 0;
  for (let first = 0, last = 0; last < times.length; last++) {
    while (times[first] <= times[last] - WINDOW_MS) first++;
    busiest = Math.max(busiest, last - first + 1);
  }
  return busiest;
}

const clients = Array.from({ length: CLIENTS }, () =>
  random() < BURSTY_SHARE ? burstyClient() : poissonClient(),
);
const trace = clients
  .flatMap(({ arrivals }, client) =>
    arrivals.map((at) => ({ at: TRACE_START_MS + Math.floor(at), client })),
  )
  .sort((a, b) => a.at - b.at);

const app = await NestFactory.createApplicationContext(RateLimitModule.forRoot({ guard: false }), {
  logger: false,
});
let virtualNow = TRACE_START_MS;
const limiter = app.get(RateLimiter).withClock(() => virtualNow);
const counter: RateLimitPolicy = {
  name: 'counter',
  algorithm: 'sliding-window-counter',
  limit: LIMIT,
  window: WINDOW_MS,
};
const log: RateLimitPolicy = { ...counter, name: 'log', algorithm: 'sliding-window-log' };

const tallies = Object.fromEntries(
  (Object.keys(TRAFFIC) as Traffic[]).map((traffic) => [
    traffic,
    {
      clients: clients.filter((client) => client.traffic === traffic).length,
      decisions: 0,
      overHistory: 0,
      underHistory: 0,
      admittedLogDenied: 0,
      deniedLogAdmitted: 0,
      busiestCounter: 0,
      busiestLog: 0,
    },
  ]),
) as Record<Traffic, Tally>;
const admittedByCounter: number[][] = clients.map(() => []);
const admittedByLog: number[][] = clients.map(() => []);
/** Per client, the first of its counter admissions still inside the exact window. */
const windowStart: number[] = clients.map(() => 0);

for (const { at, client } of trace) {
  virtualNow = at;
  const key = `client-${client}`;
  const [approximate, exact] = await Promise.all([
    limiter.consume(key, counter),
    limiter.consume(key, log),
  ]);
  const history = admittedByCounter[client];
  while (windowStart[client] < history.length && history[windowStart[client]] <= at - WINDOW_MS) {
    windowStart[client]++;
  }
  const exactOnHistory = history.length - windowStart[client] + 1 <= LIMIT;
  const tally = tallies[clients[client].traffic];
  tally.decisions++;
  if (approximate.allowed && !exactOnHistory) tally.overHistory++;
  if (!approximate.allowed && exactOnHistory) tally.underHistory++;
  if (approximate.allowed && !exact.allowed) tally.admittedLogDenied++;
  if (!approximate.allowed && exact.allowed) tally.deniedLogAdmitted++;
  if (approximate.allowed) history.push(at);
  if (exact.allowed) admittedByLog[client].push(at);
}
await app.close();
clients.forEach(({ traffic }, client) => {
  const tally = tallies[traffic];
  tally.busiestCounter = Math.max(tally.busiestCounter, busiestWindow(admittedByCounter[client]));
  tally.busiestLog = Math.max(tally.busiestLog, busiestWindow(admittedByLog[client]));
});

const all: Tally = Object.values(tallies).reduce((sum, tally) => ({
  clients: sum.clients + tally.clients,
  decisions: sum.decisions + tally.decisions,
  overHistory: sum.overHistory + tally.overHistory,
  underHistory: sum.underHistory + tally.underHistory,
  admittedLogDenied: sum.admittedLogDenied + tally.admittedLogDenied,
  deniedLogAdmitted: sum.deniedLogAdmitted + tally.deniedLogAdmitted,
  busiestCounter: Math.max(sum.busiestCounter, tally.busiestCounter),
  busiestLog: Math.max(sum.busiestLog, tally.busiestLog),
}));
const percent = (part: number, whole: number): string =>
  `${((100 * part) / Math.max(whole, 1)).toFixed(3)}%`;
const row = (label: string, tally: Tally): string =>
  [
    label,
    tally.clients,
    tally.decisions,
    `${percent(tally.overHistory + tally.underHistory, tally.decisions)} (${tally.overHistory} / ${tally.underHistory})`,
    `${percent(tally.admittedLogDenied + tally.deniedLogAdmitted, tally.decisions)} (${tally.admittedLogDenied} / ${tally.deniedLogAdmitted})`,
    `${tally.busiestCounter} (${(tally.busiestCounter / LIMIT).toFixed(2)}×)`,
    tally.busiestLog,
  ].join(' | ');

console.log(
  `Limit ${LIMIT} per ${WINDOW_MS / 1000} s; ${CLIENTS} clients over ` +
    `${DURATION_MS / WINDOW_MS} windows; seed ${options.seed}. Differences are counted as ` +
    `(counter admitted where exact denied / counter denied where exact admitted).\n`,
);
console.log(
  '| traffic | clients | decisions | differ from exact, on the counter’s own history | differ from the independent exact log | most admitted to one client in any window: counter | exact log |',
);
console.log('|---|---|---|---|---|---|---|');
for (const traffic of Object.keys(TRAFFIC) as Traffic[]) {
  console.log(`| ${row(TRAFFIC[traffic], tallies[traffic])} |`);
}
console.log(`| ${row('all', all)} |`);
