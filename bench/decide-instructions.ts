/**
 * What one decision costs on Redis, counted in instructions rather than time: steady on a
 * shared machine, where the µs of bench:decide move by ±20% from round to round. A private
 * redis-server runs under `valgrind --tool=callgrind`, collecting only inside
 * `processCommand` (a command's lookup, checks and execution, as INFO commandstats times
 * it, without network and parsing). For each algorithm, and for the routes of bench:decide,
 * the script the library sends for `consume` on Redis TIME is counted against the minimal
 * scripts (test/support/minimal-scripts.ts; a route's, one call per policy), and for the fixed
 * window against rate-limiter-flexible and @nest-lab/throttler-storage-redis, on fresh keys
 * (every decision writes a new key, as in bench:decide) and on the same keys again (state
 * present).
 *
 * DECIDE_BASELINE=<another build's dist/lib> adds the script that build sends as a variant,
 * 'library (baseline)', and a ratio column of the library against it: Redis's side of a
 * before/after comparison that a busy machine does not move (a build from before the lib/
 * restructure, #18, is found at its old paths).
 *
 *   npm run bench:decide-instructions   (DECIDE_REQUESTS, default 1000 per variant; DECIDE_ROWS;
 *                                        DECIDE_BASELINE)
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type Algorithm, ALGORITHMS } from '../lib/index.js';
import { resolvePolicies } from '../lib/config/resolved-policy.js';
import { composeDecideScript, keyCount, scriptArguments } from '../lib/stores/redis/lua-script.js';
import { REDIS_CLI_BIN, REDIS_SERVER_BIN } from '../test/support/redis-server.js';
import { freePort } from '../test/support/free-port.js';
import { MINIMAL_SCRIPTS } from '../test/support/minimal-scripts.js';
import { peerFixedWindows } from './peer-fixed-windows.js';

const REQUESTS = Number(process.env.DECIDE_REQUESTS ?? 1_000);
/** DECIDE_ROWS: labels to run, comma-separated (e.g. `fixed-window,token-bucket`); all by default. */
const ONLY = process.env.DECIDE_ROWS?.split(',');
const ROWS = (
  [
    ...ALGORITHMS.map((algorithm) => [algorithm]),
    ['fixed-window', 'sliding-window-counter'],
    ['token-bucket', 'fixed-window', 'sliding-window-counter'],
  ] as Algorithm[][]
).filter((row) => !ONLY || ONLY.includes(row.join(' + ')));

const BASELINE = process.env.DECIDE_BASELINE;
/** The baseline build's script composer, at its paths now or before the restructure. */
const baseline = BASELINE
  ? await (async () => {
      const load = (...paths: string[]) =>
        import(
          `${BASELINE}/${paths.find((path) => existsSync(`${BASELINE}/${path}`)) ?? paths[0]}`
        );
      const [scripts, policies] = await Promise.all([
        load('stores/redis/lua-script.js', 'stores/lua-script.js'),
        load('config/resolved-policy.js', 'resolved-policy.js'),
      ]);
      return {
        composeDecideScript: scripts.composeDecideScript as typeof composeDecideScript,
        scriptArguments: scripts.scriptArguments as typeof scriptArguments,
        resolvePolicies: policies.resolvePolicies as typeof resolvePolicies,
      };
    })()
  : undefined;

const dir = mkdtempSync(join(tmpdir(), 'decide-instructions-'));
const port = await freePort();
const server = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--toggle-collect=processCommand',
    `--callgrind-out-file=${dir}/callgrind.out`,
    REDIS_SERVER_BIN,
    ...['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
  ],
  { stdio: 'ignore' },
);
// Valgrind takes seconds to start it: ask until it answers, then connect.
for (let tries = 0; ; tries++) {
  try {
    execFileSync(REDIS_CLI_BIN, ['-p', String(port), 'ping'], { stdio: 'ignore' });
    break;
  } catch (error) {
    if (tries === 100) throw error;
    await sleep(300);
  }
}
const client = new Redis({ port, enableAutoPipelining: true });
const control = (flag: string) =>
  execFileSync('callgrind_control', [flag, String(server.pid)], { stdio: 'ignore' });
let dumps = 0;

/** Instructions per call of `call`, `REQUESTS` calls, 32 in flight. */
async function instructions(call: (i: number) => Promise<unknown>): Promise<number> {
  control('-z');
  let next = 0;
  const loop = async () => {
    while (next < REQUESTS) await call(next++);
  };
  await Promise.all(Array.from({ length: 32 }, loop));
  control('-d');
  const dump = readFileSync(`${dir}/callgrind.out.${++dumps}`, 'utf8');
  return Number(/^summary: (\d+)/m.exec(dump)![1]) / REQUESTS;
}

/**
 * A client's hourly budget, as a user would set one: every decision of a row admits (each
 * key is decided twice), and the answers are what a realistic limit gives (remaining and
 * reset fit the scripts' one-integer reply, lua/prelude.lua).
 */
const LIMIT = 1_000;
/** An hour: a window edge passes during a row about once in 3,600 runs. */
const WINDOW_MS = 3_600_000;
const closers: (() => void)[] = [];
const lines = [
  `| row | variant | fresh keys | vs minimal | keys present | vs minimal |${baseline ? ' fresh vs baseline | present vs baseline |' : ''}`,
  `|---|---|---|---|---|---|${baseline ? '---|---|' : ''}`,
];
try {
  for (const algorithms of ROWS) {
    const label = algorithms.join(' + ');
    const asPolicies = algorithms.map((algorithm, i) => ({
      name: `p${i}`,
      algorithm,
      limit: LIMIT,
      window: WINDOW_MS,
    }));
    const policies = resolvePolicies(asPolicies, { label, defaultScope: 'global' });
    const keysOf = (i: number) => policies.map((policy) => `rl:{client-${i}}${policy.keySuffix}`);
    // As the library sends it for these policies at their own costs (1): values and costs
    // written into the script; a lone fixed window in the opening the store settles on for
    // each population (written first on fresh keys, charged first on keys present:
    // WindowOpening).
    const [written, charged] = await Promise.all(
      [true, false].map((writtenFirst) =>
        client.script(
          'LOAD',
          composeDecideScript(
            policies,
            'consume',
            'all',
            policies.map(() => 1),
            writtenFirst,
          ),
        ),
      ),
    );
    const seen = new Set<number>();
    const request = (i: number) => ({
      mode: 'consume' as const,
      keys: keysOf(i),
      policies,
      costs: policies.map(() => 1),
      now: undefined,
      ttlFloorMs: 0,
      wantedUntil: Date.now() + 3_600_000,
    });
    const libraryCall = (i: number) => {
      const sha = seen.has(i) ? charged : written;
      seen.add(i);
      return client.evalsha(
        sha as string,
        keyCount(policies),
        ...scriptArguments(request(i), 'consume', 'consume', 'all'),
      );
    };
    const minimal = await Promise.all(
      algorithms.map((algorithm) => client.script('LOAD', MINIMAL_SCRIPTS[algorithm])),
    );
    const minimalCall = (i: number) =>
      Promise.all(
        policies.map((policy, p) =>
          client.evalsha(minimal[p] as string, 1, keysOf(i)[p], ...policy.scriptArgs, 1),
        ),
      );
    const variants: Record<string, (i: number) => Promise<unknown>> = {
      library: libraryCall,
      'minimal script(s)': minimalCall,
    };
    if (baseline) {
      // The same policies, resolved and composed by the baseline build as it sent them.
      const before = baseline.resolvePolicies(asPolicies, { label, defaultScope: 'global' });
      const costs = before.map(() => 1);
      const sha = (await client.script(
        'LOAD',
        baseline.composeDecideScript(before, 'consume', 'all', costs),
      )) as string;
      variants['library (baseline)'] = (i) =>
        client.evalsha(
          sha,
          keyCount(before),
          ...baseline.scriptArguments(
            {
              ...request(i),
              policies: before,
              keys: before.map((policy) => `rl:{client-${i}}${policy.keySuffix}`),
            },
            'consume',
            'consume',
            'all',
          ),
        );
    }
    if (label === 'fixed-window') {
      const peers = peerFixedWindows(
        client,
        `redis://127.0.0.1:${port}`,
        { enableAutoPipelining: true },
        LIMIT,
        WINDOW_MS,
      );
      closers.push(peers.close);
      for (const [name, call] of Object.entries(peers.variants)) {
        variants[name] = (i) => call(`client-${i}`);
      }
    }
    const figures: Record<string, [number, number]> = {};
    for (const [variant, call] of Object.entries(variants)) {
      await client.flushall();
      figures[variant] = [await instructions(call), await instructions(call)];
    }
    const [minimalFresh, minimalPresent] = figures['minimal script(s)'];
    const [baselineFresh, baselinePresent] = figures['library (baseline)'] ?? [];
    const cell = (value: number) => Math.round(value).toLocaleString('en-US');
    for (const [variant, [fresh, present]] of Object.entries(figures)) {
      const againstBaseline =
        baseline && variant === 'library'
          ? ` ${(fresh / baselineFresh).toFixed(3)}x | ${(present / baselinePresent).toFixed(3)}x |`
          : baseline
            ? ' | |'
            : '';
      lines.push(
        `| ${label} | ${variant} | ${cell(fresh)} | ${(fresh / minimalFresh).toFixed(2)}x | ` +
          `${cell(present)} | ${(present / minimalPresent).toFixed(2)}x |${againstBaseline}`,
      );
      console.error(lines.at(-1));
    }
  }
} finally {
  closers.forEach((close) => close());
  client.disconnect();
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
console.log(
  `\nRedis instructions per decision inside processCommand (callgrind), ${REQUESTS} per variant\n`,
);
console.log(lines.join('\n'));
