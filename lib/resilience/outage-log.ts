import type { Logger } from '@nestjs/common';
import { DeadlineExceededError } from './deadline.js';

/**
 * Redis's own error codes and Node's, in words a person can act on, followed by the message
 * itself where it tells more.
 */
const CAUSES: readonly [RegExp, string][] = [
  [/\bNOAUTH\b/, 'NOAUTH: Redis requires a password, and the client logged in without one'],
  [/\bWRONGPASS\b/, 'WRONGPASS: the user name or password is wrong'],
  [/\bNOPERM\b/, 'NOPERM: the Redis user lacks a permission the limiter needs'],
  [/^OOM\b/, 'OOM: Redis is at its maxmemory and refuses writes'],
  [/\bECONNREFUSED\b/, 'connection refused: nothing listens at that address'],
  [/\b(ECONNRESET|EPIPE)\b|connection is closed|socket closed unexpectedly/i, 'connection lost'],
  [/^Redis connection is \w+$/, 'connection lost'],
];

/**
 * ioredis' words for a command whose connection dropped under it, or that found none: they
 * name maxRetriesPerRequest and enableOfflineQueue, options the module sets, not the user,
 * so they are not repeated.
 */
const DROPPED_UNDER_A_COMMAND = /max retries per request|stream isn't writeable/i;

/** Why a store call failed, in words: the first cause its message shows, or the message. */
export function describeFailure(error: unknown): string {
  if (error instanceof DeadlineExceededError) return error.message;
  const message = error instanceof Error ? error.message : String(error);
  if (DROPPED_UNDER_A_COMMAND.test(message)) return 'connection lost';
  const cause = CAUSES.find(([pattern]) => pattern.test(message));
  return cause ? `${cause[1]} (${message})` : message;
}

/** Outages that start sooner than this after the last one was logged are not logged again. */
const QUIET_MS = 5_000;

/**
 * One warning when the store starts failing, with the cause in words (and another only if the
 * cause changes, as when a lost connection comes back refused for a password), and one line
 * when it answers again, with how long the outage lasted and how many store calls failed in
 * it: a log a person can act on, whatever the request rate. A store that flaps (a timeout now
 * and then under load) would make two lines a blip: a blip within QUIET_MS of the last
 * logged outage's warning is counted, not logged, and the next line logged reports it.
 */
export class OutageLog {
  /** Set during an outage: when it began (monotonic ms), and how many calls failed since. */
  private since: number | undefined;
  private failures = 0;
  /** Whether this outage was logged: its end is then logged too. */
  private logged = false;
  /** When an outage was last logged as starting. */
  private loggedAt = -Infinity;
  /** Calls that failed in outages left unlogged, for the next line. */
  private unreported = 0;
  /** The cause last logged, in words (without the message that followed). */
  private cause = '';

  /**
   * @param meanwhile what requests get meanwhile, for the first warning: it may change once
   *   the routes are planned, which is when their own failure modes are known
   */
  constructor(
    private readonly logger: Logger,
    public meanwhile: string,
    private readonly now: () => number = () => performance.now(),
  ) {}

  failed(error: unknown): void {
    this.failures++;
    if (this.since === undefined) {
      this.since = this.now();
      this.logged = this.since - this.loggedAt >= QUIET_MS;
    }
    if (!this.logged) return;
    const described = describeFailure(error);
    const cause = described.split(' (')[0];
    if (this.loggedAt < this.since) {
      this.loggedAt = this.since;
      this.logger.warn(
        `Rate limit store unavailable: ${described}; ${this.meanwhile}${this.earlier()}`,
      );
    } else if (cause !== this.cause) {
      this.logger.warn(
        `Rate limit store still unavailable after ${this.elapsed()} s: ${described}`,
      );
    }
    this.cause = cause;
  }

  answered(): void {
    if (this.since === undefined) return;
    if (this.logged) {
      this.logger.log(
        `Rate limit store answering again after ${this.elapsed()} s; ${calls(this.failures)} failed meanwhile${this.earlier()}`,
      );
    } else {
      this.unreported += this.failures;
    }
    this.since = undefined;
    this.failures = 0;
    this.cause = '';
  }

  private elapsed(): string {
    return ((this.now() - this.since!) / 1_000).toFixed(1);
  }

  /** The brief outages' failures not yet reported, once. */
  private earlier(): string {
    const unreported = this.unreported;
    this.unreported = 0;
    return unreported === 0 ? '' : `; ${calls(unreported)} failed in brief outages before`;
  }
}

const calls = (n: number) => `${n} store call${n === 1 ? '' : 's'}`;
