import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  CLIENT_KEY_HEADER,
  CLOCK_SKEW_ENV,
  DECISION_ENDED_HEADER,
  DECISION_STARTED_HEADER,
  LOOP_DELAY_PATH,
  POD_CONFIG_ENV,
  type PodConfig,
  READY_LINE,
  REQUEST_LOG_PATH,
  routePath,
} from './pod-config.js';
import { packageRoot } from '../package-root.js';
import type { PodRequestLog } from './request-log.js';

const HOST = '127.0.0.1';
/** Six Nest apps starting at once on two cores take a few seconds; allow plenty. */
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 5_000;
const MAX_STDERR_CHARS = 8_192;

export interface PodFleetOptions {
  readonly pods: number;
  readonly config: PodConfig;
  /** Per pod, how far its `Date.now()` is shifted (ms); omitted: no shift. */
  readonly clockSkewsMs?: readonly number[];
}

export interface LoadSpec {
  /** A key of the fleet's `config.routes`. */
  readonly route: string;
  /** Sent as the client key header: every request is the same client on every pod. */
  readonly clientKey: string;
  readonly requests: number;
  /** Requests in flight at once, spread evenly over the pods. */
  readonly concurrency: number;
  /** The pods (by index) that take the load, in turn; omitted: every pod. */
  readonly pods?: readonly number[];
  /** Headers of request i (of this load), beside the client key; omitted: none. */
  readonly headers?: (index: number) => Readonly<Record<string, string>>;
}

export interface ResponseRecord {
  /** The request's index in its load. */
  readonly index: number;
  /** Index of the pod that answered. */
  readonly pod: number;
  /** HTTP status; 0 when the request failed without a response. */
  readonly status: number;
  /** Client-side round trip, including any leaky-bucket wait. */
  readonly latencyMs: number;
  /** Pod-clock epoch ms bracketing the store decision; absent for the naive guard. */
  readonly decisionStartedAt?: number;
  readonly decisionEndedAt?: number;
}

export interface LoadReport {
  readonly responses: readonly ResponseRecord[];
  /** Count of responses per status code. */
  readonly statuses: Readonly<Record<number, number>>;
  /** 200s the limiter decided: its store answered in time and admitted them. */
  readonly admitted: number;
  /**
   * 200s no store decided: the decision failed or missed the deadline and the failure mode
   * let them through. Counted apart, so a store that was not answering inflates no figure.
   */
  readonly failedOpen: number;
}

export interface PodFleet {
  readonly ports: readonly number[];
  /** Sends `requests` requests, request i to pod i mod N (of `pods`), `concurrency` at a time. */
  fire(load: LoadSpec): Promise<LoadReport>;
  /** Each pod's largest event-loop delay in ms since the previous call (see LOOP_DELAY_PATH). */
  loopDelays(): Promise<number[]>;
  /**
   * Ends one pod and waits for it to exit: SIGTERM closes its app (shutdown hooks run),
   * SIGKILL gives it no chance to.
   */
  stopPod(index: number, signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** With `config.requestLog`: each pod's requests since the previous call, in order answered. */
  requestLogs(): Promise<PodRequestLog[]>;
  /** Stops every pod and waits for them to exit. */
  stop(): Promise<void>;
}

/** The compiled pod app and clock preload: child processes cannot run TypeScript on Node 20. */
export function compiledPodFile(file: string): string {
  const path = join(packageRoot(), 'dist', 'test', 'support', 'pods', file);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` first`);
  return path;
}

interface Pod {
  readonly port: number;
  readonly agent: Agent;
  stop(signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

function startPod(config: PodConfig, skewMs: number | undefined): Promise<Pod> {
  const preload = skewMs === undefined ? [] : ['--import', compiledPodFile('skew-clock.js')];
  const child = spawn(process.execPath, [...preload, compiledPodFile('pod-app.js')], {
    env: {
      ...process.env,
      [POD_CONFIG_ENV]: JSON.stringify(config),
      ...(skewMs === undefined ? {} : { [CLOCK_SKEW_ENV]: String(skewMs) }),
    },
    // stdin stays open and unused: the pod exits when it closes, even if we are killed.
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-MAX_STDERR_CHARS);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(escalate);
  };
  return new Promise<Pod>((resolve, reject) => {
    const fail = (reason: string): void => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`pod ${reason}:\n${stderr}`)));
    };
    const timer = setTimeout(
      () => fail(`not ready within ${READY_TIMEOUT_MS} ms`),
      READY_TIMEOUT_MS,
    );
    const onEarlyExit = (code: number | null, signal: NodeJS.Signals | null): void =>
      fail(`exited during start-up (${signal ?? code})`);
    child.once('exit', onEarlyExit);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const ready = READY_LINE.exec(stdout);
      if (!ready) return;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      resolve({ port: Number(ready[1]), agent: new Agent({ keepAlive: true }), stop });
    });
  });
}

/** Starts `pods` pod processes with one config (and optional clock skews) and waits for all. */
export async function startPodFleet(options: PodFleetOptions): Promise<PodFleet> {
  const started = await Promise.allSettled(
    Array.from({ length: options.pods }, (_, i) =>
      startPod(options.config, options.clockSkewsMs?.[i]),
    ),
  );
  const pods = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stop = async (): Promise<void> => {
    for (const pod of pods) pod.agent.destroy();
    await Promise.all(pods.map((pod) => pod.stop()));
  };
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  // Pods stamp every response their store decided; the naive guard has no store to stamp.
  const stamped = options.config.variant !== 'naive-redis';
  return {
    ports: pods.map((pod) => pod.port),
    fire: (load) => fire(pods, load, stamped),
    stopPod: (index, signal) => {
      pods[index].agent.destroy();
      return pods[index].stop(signal);
    },
    loopDelays: () =>
      Promise.all(
        pods.map(async ({ port }) =>
          Number(await (await fetch(`http://${HOST}:${port}${LOOP_DELAY_PATH}`)).text()),
        ),
      ),
    requestLogs: () =>
      Promise.all(
        pods.map(
          async ({ port }) =>
            (await (
              await fetch(`http://${HOST}:${port}${REQUEST_LOG_PATH}`)
            ).json()) as PodRequestLog,
        ),
      ),
    stop,
  };
}

async function fire(pods: readonly Pod[], load: LoadSpec, stamped: boolean): Promise<LoadReport> {
  const targets = load.pods ?? pods.map((_, i) => i);
  const socketsPerPod = Math.ceil(load.concurrency / targets.length);
  for (const i of targets) pods[i].agent.maxSockets = socketsPerPod;
  const responses: ResponseRecord[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < load.requests) {
      const index = next++;
      responses.push(await send(pods, targets[index % targets.length], load, index));
    }
  };
  await Promise.all(Array.from({ length: load.concurrency }, worker));
  const statuses: Record<number, number> = {};
  let failedOpen = 0;
  for (const { status, decisionEndedAt } of responses) {
    statuses[status] = (statuses[status] ?? 0) + 1;
    if (status === 200 && stamped && decisionEndedAt === undefined) failedOpen++;
  }
  return { responses, statuses, admitted: (statuses[200] ?? 0) - failedOpen, failedOpen };
}

function send(
  pods: readonly Pod[],
  podIndex: number,
  load: LoadSpec,
  index: number,
): Promise<ResponseRecord> {
  const { port, agent } = pods[podIndex];
  const sentAt = performance.now();
  return new Promise((resolve) => {
    const outgoing = request(
      {
        host: HOST,
        port,
        path: routePath(load.route),
        agent,
        headers: { ...load.headers?.(index), [CLIENT_KEY_HEADER]: load.clientKey },
      },
      (incoming) => {
        incoming.resume();
        incoming.once('end', () => {
          const started = incoming.headers[DECISION_STARTED_HEADER];
          const ended = incoming.headers[DECISION_ENDED_HEADER];
          resolve({
            index,
            pod: podIndex,
            status: incoming.statusCode ?? 0,
            latencyMs: performance.now() - sentAt,
            ...(typeof started === 'string' ? { decisionStartedAt: Number(started) } : {}),
            ...(typeof ended === 'string' ? { decisionEndedAt: Number(ended) } : {}),
          });
        });
      },
    );
    outgoing.once('error', () =>
      resolve({ index, pod: podIndex, status: 0, latencyMs: performance.now() - sentAt }),
    );
    outgoing.end();
  });
}
