/**
 * Long-running health: many decisions through the RateLimiter service of a Nest application
 * context on its own redis-server, in rounds that each start once Redis decides again, with a
 * Redis fault a third into every round but the first and the last (killed and restarted, SIGSTOP, CLIENT PAUSE, SCRIPT FLUSH, out of
 * memory). After each round it collects garbage and records the heap, the process's active
 * resources (timers, sockets...) and the listeners on the Redis client and the process.
 * Prints one JSON report on the last line; test/e2e/soak.spec.ts asserts on it.
 * Run with --expose-gc. Options: --requests (default 200,000), --rounds (default 10),
 * --failure-mode (default 'open'; with 'local', each decides at a third of the limits).
 */
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import {
  RATE_LIMIT_REDIS,
  RateLimiter,
  RateLimitModule,
  type RateLimitPolicy,
  RateLimitUnavailableException,
} from '../../lib/index.js';
import { type RedisServer, sendRawCommand, startRedisServer } from './redis-server.js';

const { values: options } = parseArgs({
  options: {
    requests: { type: 'string', default: '200000' },
    rounds: { type: 'string', default: '10' },
    'failure-mode': { type: 'string', default: 'open' },
  },
});
const REQUESTS = Number(options.requests);
const ROUNDS = Number(options.rounds);
const IN_FLIGHT = 64;
/** Few enough that the per-second policy denies some of every client's requests. */
const CLIENTS = 100;
const FAULT_MS = 300;
const POLICIES: RateLimitPolicy[] = [
  { name: 'second', algorithm: 'sliding-window-counter', limit: 20, window: '1s' },
  { name: 'minute', algorithm: 'token-bucket', limit: 600, window: '1m' },
];

export interface SoakRound {
  readonly round: number;
  readonly fault: string | null;
  readonly allowed: number;
  readonly denied: number;
  readonly unavailable: number;
  readonly heapUsedBytes: number;
  /** process.getActiveResourcesInfo(), counted by type. */
  readonly resources: Record<string, number>;
  /** Listeners by event name, on the Redis client and on the process. */
  readonly clientListeners: Record<string, number>;
  readonly processListeners: Record<string, number>;
}

export interface SoakReport {
  readonly requests: number;
  readonly rounds: SoakRound[];
  readonly unhandledRejections: string[];
  readonly unexpectedErrors: string[];
}

const FAULTS: [string, (redis: RedisServer) => Promise<void>][] = [
  [
    'killed and restarted',
    async (redis) => {
      await redis.kill();
      await sleep(FAULT_MS);
      await redis.restart();
    },
  ],
  ['SIGSTOP', (redis) => redis.pause(FAULT_MS).then(() => sleep(FAULT_MS))],
  [
    'CLIENT PAUSE',
    async (redis) => {
      await sendRawCommand(redis.port, ['CLIENT', 'PAUSE', String(FAULT_MS), 'ALL']);
      await sleep(FAULT_MS);
    },
  ],
  [
    'SCRIPT FLUSH',
    (redis) => sendRawCommand(redis.port, ['SCRIPT', 'FLUSH']).then(() => undefined),
  ],
  [
    'out of memory',
    async (redis) => {
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory-policy', 'noeviction']);
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory', '1']);
      await sleep(FAULT_MS);
      await sendRawCommand(redis.port, ['CONFIG', 'SET', 'maxmemory', '0']);
    },
  ],
];

const unhandledRejections: string[] = [];
process.on('unhandledRejection', (reason) => unhandledRejections.push(String(reason)));
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const redis = await startRedisServer();

@Module({
  imports: [
    RateLimitModule.forRoot({
      redis: redis.url,
      failureMode: options['failure-mode'] as 'open' | 'local',
      ...(options['failure-mode'] === 'local' && { instances: 3 }),
      // Every decision goes to Redis, so each fault meets load: with the deny cache on,
      // a round of mostly denied clients can end before anything asks Redis again.
      denyCache: false,
    }),
  ],
})
class SoakModule {}

const app = await NestFactory.createApplicationContext(SoakModule, { logger: false });
const limiter = app.get(RateLimiter);
const client = app.get<Redis>(RATE_LIMIT_REDIS);
/** Listeners by event name. */
const listenerCounts = (emitter: NodeJS.EventEmitter): Record<string, number> =>
  Object.fromEntries(
    emitter.eventNames().map((name) => [String(name), emitter.listenerCount(name)]),
  );

/** Waits until Redis decides again after the last round's fault (the client reconnects). */
async function untilDecided(): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      await limiter.peek('probe', POLICIES);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(20);
    }
  }
}

const rounds: SoakRound[] = [];
const unexpectedErrors: string[] = [];
let sent = 0;
try {
  for (let round = 0; round < ROUNDS; round++) {
    const quota = Math.ceil(REQUESTS / ROUNDS);
    const counts = { allowed: 0, denied: 0, unavailable: 0 };
    const fault = round === 0 || round === ROUNDS - 1 ? null : FAULTS[(round - 1) % FAULTS.length];
    await untilDecided();
    let faulting: Promise<void> | undefined;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < quota) {
        const i = next++;
        // The fault strikes a third into the round, under load.
        if (i === Math.floor(quota / 3)) faulting = fault?.[1](redis);
        try {
          const decision = await limiter.consume(`client-${(sent + i) % CLIENTS}`, POLICIES);
          counts[decision.allowed ? 'allowed' : 'denied']++;
        } catch (error) {
          if (error instanceof RateLimitUnavailableException) counts.unavailable++;
          else if (unexpectedErrors.length < 20) unexpectedErrors.push(String(error));
        }
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    await faulting;
    sent += quota;
    // The immediates a round's last decisions queued (the deadline's checks, the client's
    // write) run first: only what stays pending counts.
    await new Promise((resolve) => setTimeout(resolve, 10));
    gc();
    const resources: Record<string, number> = {};
    for (const type of process.getActiveResourcesInfo())
      resources[type] = (resources[type] ?? 0) + 1;
    rounds.push({
      round,
      fault: fault?.[0] ?? null,
      ...counts,
      heapUsedBytes: process.memoryUsage().heapUsed,
      resources,
      clientListeners: listenerCounts(client),
      processListeners: listenerCounts(process),
    });
  }
} finally {
  await app.close();
  await redis.stop();
}
const report: SoakReport = { requests: sent, rounds, unhandledRejections, unexpectedErrors };
console.log(JSON.stringify(report));
