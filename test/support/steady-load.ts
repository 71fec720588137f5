import { Agent, request } from 'node:http';

/** One client of a steady load: its key (sent as `x-client`) and its request rate. */
export interface SteadyClient {
  readonly key: string;
  readonly perSecond: number;
}

/** What one request saw. Times are epoch ms of this process (the same clock as the pods'). */
export interface LoadSample {
  readonly client: string;
  /** Index into the targets. */
  readonly target: number;
  readonly sentAt: number;
  readonly doneAt: number;
  /** HTTP status; 0 when the request failed without a response. */
  readonly status: number;
  /** Whether the response carried RateLimit headers, i.e. the store decided it. */
  readonly decided: boolean;
  readonly retryAfter: string | undefined;
  /** Pod-clock epoch ms bracketing the store call, when the target stamps them. */
  readonly decisionStartedAt?: number;
  readonly decisionEndedAt?: number;
  /** Why there was no response, when status is 0. */
  readonly error?: string;
}

export interface SteadyLoad {
  /** Everything answered so far, in order of completion. */
  readonly samples: readonly LoadSample[];
  /** Stops sending and resolves once every request in flight has been answered. */
  stop(): Promise<LoadSample[]>;
}

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Open-loop load: each client sends at its own fixed rate whatever the latency (as real
 * traffic does), its requests spread round-robin over `targets` (full URLs of one route).
 */
export function startSteadyLoad(
  targets: readonly string[],
  clients: readonly SteadyClient[],
): SteadyLoad {
  const agent = new Agent({ keepAlive: true });
  const samples: LoadSample[] = [];
  const inFlight = new Set<Promise<void>>();
  const send = (client: string, target: number): void => {
    const sentAt = Date.now();
    const done = new Promise<void>((resolve) => {
      const record = (
        status: number,
        headers: Record<string, string | string[] | undefined> = {},
        error?: Error,
      ): void => {
        const number = (name: string) =>
          typeof headers[name] === 'string' ? Number(headers[name]) : undefined;
        samples.push({
          client,
          target,
          sentAt,
          doneAt: Date.now(),
          status,
          decided: headers['ratelimit'] !== undefined,
          retryAfter: headers['retry-after'] as string | undefined,
          decisionStartedAt: number('x-decision-started-at'),
          decisionEndedAt: number('x-decision-ended-at'),
          ...(error && { error: error.message }),
        });
        resolve();
      };
      const attempt = (): void => {
        const outgoing = request(
          targets[target],
          { agent, headers: { 'x-client': client }, timeout: REQUEST_TIMEOUT_MS },
          (incoming) => {
            incoming.resume();
            incoming.once('end', () => record(incoming.statusCode ?? 0, incoming.headers));
            incoming.once('error', (error) => record(0, {}, error));
          },
        );
        outgoing.once('timeout', () => outgoing.destroy());
        outgoing.once('error', (error: NodeJS.ErrnoException) => {
          // A kept-alive socket the server closed as the request went out: the server never
          // read it, so sending it again is safe (Node's documented remedy).
          if (outgoing.reusedSocket && error.code === 'ECONNRESET') attempt();
          else record(0, {}, error);
        });
        outgoing.end();
      };
      attempt();
    });
    inFlight.add(done);
    void done.then(() => inFlight.delete(done));
  };
  const timers = clients.map((client, c) => {
    let sent = c;
    return setInterval(() => send(client.key, sent++ % targets.length), 1_000 / client.perSecond);
  });
  return {
    samples,
    async stop() {
      for (const timer of timers) clearInterval(timer);
      while (inFlight.size > 0) await Promise.all(inFlight);
      agent.destroy();
      return samples;
    },
  };
}

/** The p-th percentile (0-100) of `values`, nearest rank; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}
