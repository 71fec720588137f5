/**
 * Backs what test/support/hot-path-app.ts says about settling its apps: the Fastify app with no
 * limiter and with the limiter's `metrics` option on, each started HOT_PATH_PROCESSES times
 * as it is (`HOT_PATH_SETTLE=0`) and settled (one full GC while idle once listening), and the
 * no-limiter app as it is and then left idle (see STARTS), under V8's map log. Per process: how many times V8 made the map of Node's `process.nextTick`
 * tick objects (found in the log as the chain of transitions adding the tick object's
 * properties, in its literal's order), and the app's CPU per request over a few seconds of
 * one hot key. One map: the state a process keeps while no full GC has found the tick queue
 * empty; more: the state every long-running process reaches (a quiet spell is enough).
 *
 *   npm run bench:next-tick-state
 *   HOT_PATH_PROCESSES (4), HOT_PATH_SECONDS (3) to tune
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { startRedisServer } from '../test/support/redis-server.js';
import { startHotPathApp } from '../test/support/hot-path-app-process.js';

const PROCESSES = Number(process.env.HOT_PATH_PROCESSES ?? 4);
const SECONDS = Number(process.env.HOT_PATH_SECONDS ?? 3);
const APP = new URL('../test/support/hot-path-app.js', import.meta.url);
/**
 * How each app starts: as it is, settled, or as it is and then left without requests for
 * IDLE_MS, long enough for V8's memory reducer to run its full GCs.
 */
const IDLE_MS = 20_000;
const STARTS = [
  { variant: 'none', start: 'as it is', settle: '0', idleMs: 0 },
  { variant: 'none', start: 'settled', settle: '1', idleMs: 0 },
  {
    variant: 'none',
    start: `as it is, then idle ${IDLE_MS / 1000} s`,
    settle: '0',
    idleMs: IDLE_MS,
  },
  { variant: 'metrics', start: 'as it is', settle: '0', idleMs: 0 },
  { variant: 'metrics', start: 'settled', settle: '1', idleMs: 0 },
];
const TICK_OBJECT_KEYS = [
  'symbol("async_id_symbol"',
  'symbol("trigger_async_id_symbol"',
  'callback',
  'args',
];

/**
 * How many tick-object maps the log shows: chains of four transitions, each from the map
 * the one before made, adding the tick object's keys in order.
 */
function tickObjectMaps(log: string): number {
  const transitions = log
    .split('\n')
    .filter((line) => line.startsWith('map,Transition,'))
    .map((line) => {
      const [, , , from, to, , , , , key] = line.split(',');
      return { from, to, key };
    });
  const byFrom = new Map<string, { to: string; key: string }[]>();
  for (const t of transitions) byFrom.set(t.from, [...(byFrom.get(t.from) ?? []), t]);
  const keyIs = (key: string, i: number) =>
    i < 2 ? key.startsWith(TICK_OBJECT_KEYS[i]) : key === TICK_OBJECT_KEYS[i];
  const completes = (map: string, i: number): boolean =>
    i === TICK_OBJECT_KEYS.length ||
    (byFrom.get(map) ?? []).some((t) => keyIs(t.key, i) && completes(t.to, i + 1));
  return transitions.filter((t) => keyIs(t.key, 0) && completes(t.to, 1)).length;
}

const hot = (url: string, seconds: number, client: string) =>
  autocannon({
    url: `${url}/hot`,
    connections: 32,
    duration: seconds,
    headers: { 'x-client': client },
  });

const redis = await startRedisServer();
const dir = mkdtempSync(join(tmpdir(), 'next-tick-state-'));
const rows: string[] = [];
try {
  for (const { variant, start, settle, idleMs } of STARTS) {
    const maps: number[] = [];
    const cpu: number[] = [];
    for (let n = 0; n < PROCESSES; n++) {
      const name = `${variant}-${settle}-${idleMs}-${n}`;
      const logFile = join(dir, `${name}.log`);
      const app = await startHotPathApp(APP, 'fastify', variant, redis.url, {
        nodeFlags: ['--log-maps', `--logfile=${logFile}`, '--no-logfile-per-isolate'],
        env: { HOT_PATH_SETTLE: settle },
      });
      try {
        await new Promise((resolve) => setTimeout(resolve, idleMs));
        await hot(app.url, 1, name);
        const before = app.cpuUs();
        const { requests } = await hot(app.url, SECONDS, name);
        cpu.push((app.cpuUs() - before) / requests.total);
      } finally {
        await app.stop();
      }
      maps.push(tickObjectMaps(readFileSync(logFile, 'utf8')));
      console.log(
        `${variant} ${start} #${n}: ${maps.at(-1)} tick-object map(s), ` +
          `app CPU ${cpu.at(-1)!.toFixed(1)} µs per request`,
      );
    }
    rows.push(
      `| ${variant === 'none' ? 'no limiter' : 'library, metrics on'} | ${start} | ${maps.join(', ')} | ${cpu.map((us) => us.toFixed(1)).join(', ')} |`,
    );
  }
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  '\n| Fastify app, one hot key | start | tick-object maps made, per process | app CPU µs per request, per process (under the map log) |\n|---|---|---|---|',
);
for (const row of rows) console.log(row);
