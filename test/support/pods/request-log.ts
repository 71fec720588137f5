import type { IncomingMessage, ServerResponse } from 'node:http';
import { CLIENT_KEY_HEADER, DECISION_ENDED_HEADER, DECISION_STARTED_HEADER } from './pod-config.js';

/** One request as the pod saw it. Times are the pod's epoch ms (Date.now()). */
export interface PodRequestRecord {
  readonly path: string;
  readonly client: string;
  /** When the pod's middleware first saw it, and when its response was written out. */
  readonly receivedAt: number;
  readonly answeredAt: number;
  readonly status: number;
  /** Bracketing the store's decision, when the store decided it (decision-timing.ts). */
  readonly decisionStartedAt?: number;
  readonly decisionEndedAt?: number;
}

/**
 * A span (pod epoch ms) in which the pod's event loop ran nothing for longer than
 * STALL_AFTER_MS, and of it how long the process was not running at all: the span less the
 * CPU time it used meanwhile (all its threads: an underestimate), i.e. how long the machine
 * left it unscheduled.
 */
export interface PodStall {
  readonly from: number;
  readonly to: number;
  readonly unscheduledMs: number;
}

/** What a pod hands over at REQUEST_LOG_PATH. */
export interface PodRequestLog {
  readonly records: PodRequestRecord[];
  readonly stalls: PodStall[];
}

/**
 * How long the machine left a pod unscheduled within [from, to] (epoch ms), from its
 * `stalls`: what no code in the pod can make up for.
 */
export function unscheduledWithin(stalls: readonly PodStall[], from: number, to: number): number {
  return stalls.reduce((sum, stall) => {
    // A stall's share that lies within [from, to].
    const within = Math.min(to, stall.to) - Math.max(from, stall.from);
    return within <= 0 ? sum : sum + (stall.unscheduledMs * within) / (stall.to - stall.from);
  }, 0);
}

const TICK_MS = 2;
const STALL_AFTER_MS = 5;

/**
 * Express middleware and handler pair: `record` keeps every request the pod answers, and
 * `serve` hands them over (and forgets them) as JSON. The pod's own view, free of the load
 * generator's lag: when each request arrived, when it was answered and whether Redis decided
 * it.
 */
export function requestLog(): {
  record(request: IncomingMessage, response: ServerResponse, next: () => void): void;
  serve(request: IncomingMessage, response: ServerResponse): void;
} {
  let records: PodRequestRecord[] = [];
  let stalls: PodStall[] = [];
  let tickAt = Date.now();
  let cpu = process.cpuUsage();
  setInterval(() => {
    const now = Date.now();
    const cpuNow = process.cpuUsage();
    if (now - tickAt > TICK_MS + STALL_AFTER_MS) {
      const usedMs = (cpuNow.user - cpu.user + cpuNow.system - cpu.system) / 1_000;
      stalls.push({ from: tickAt, to: now, unscheduledMs: Math.max(0, now - tickAt - usedMs) });
    }
    tickAt = now;
    cpu = cpuNow;
  }, TICK_MS).unref();
  return {
    record(request, response, next) {
      const receivedAt = Date.now();
      response.once('finish', () => {
        const header = (name: string) => {
          const value = response.getHeader(name);
          return value === undefined ? undefined : Number(value);
        };
        const client = request.headers[CLIENT_KEY_HEADER];
        records.push({
          path: request.url ?? '',
          client: typeof client === 'string' ? client : '',
          receivedAt,
          answeredAt: Date.now(),
          status: response.statusCode,
          decisionStartedAt: header(DECISION_STARTED_HEADER),
          decisionEndedAt: header(DECISION_ENDED_HEADER),
        });
      });
      next();
    },
    serve(_request, response) {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ records, stalls } satisfies PodRequestLog));
      records = [];
      stalls = [];
    },
  };
}
