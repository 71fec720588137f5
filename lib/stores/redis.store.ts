import type { Cluster, Redis } from 'ioredis';
import { loadDecideScript } from './lua-script.js';
import type {
  DecideRequest,
  PolicyVerdict,
  RateLimitStore,
  StoreDecision,
} from './rate-limit-store.interface.js';

/** Name under which the script is defined on the client (EVALSHA, reloaded on NOSCRIPT). */
const DECIDE_COMMAND = 'nestjsRateLimitDecide';

type ScriptReply = [number, ...[number, number, string, string, string][]];
type DecideCommand = (...args: (string | number)[]) => Promise<ScriptReply>;

/**
 * Decides with one EVALSHA of the bundled Lua per request, whatever the number of policies.
 * ioredis' defineCommand sends EVALSHA and reloads the script on NOSCRIPT by itself.
 */
export class RedisStore implements RateLimitStore {
  private readonly decideScript: DecideCommand;

  /** @param owned the store closes the client only if it created it */
  constructor(
    private readonly client: Redis | Cluster,
    private readonly owned: boolean,
  ) {
    if (typeof (client as unknown as Record<string, unknown>)[DECIDE_COMMAND] !== 'function') {
      client.defineCommand(DECIDE_COMMAND, { lua: loadDecideScript() });
    }
    // A lazyConnect client would otherwise never connect: fast failure sends it no command.
    if (client.status === 'wait') client.connect().catch(() => undefined);
    const command = (client as unknown as Record<string, DecideCommand>)[DECIDE_COMMAND];
    this.decideScript = command.bind(client);
  }

  async decide(request: DecideRequest): Promise<StoreDecision> {
    this.assertConnected();
    const { keys, policies, costs } = request;
    const args: (string | number)[] = [
      keys.length,
      ...keys,
      request.mode,
      request.now ?? '',
      request.ttlFloorMs,
    ];
    for (let i = 0; i < policies.length; i++) args.push(...policies[i].scriptArgs, costs[i]);
    const [admitted, ...replies] = await this.decideScript(...args);
    return {
      allowed: admitted === 1,
      verdicts: replies.map(([allowed, remaining, reset, retry, delay]): PolicyVerdict => ({
        allowed: allowed === 1,
        remaining,
        resetMs: Number(reset),
        retryAfterMs: Number(retry),
        delayMs: Number(delay),
      })),
    };
  }

  async reset(keys: readonly string[]): Promise<void> {
    this.assertConnected();
    // One DEL per key: keys of different clients may live in different Cluster slots.
    await Promise.all(keys.map((key) => this.client.del(key)));
  }

  async close(): Promise<void> {
    if (this.owned) this.client.disconnect();
  }

  /**
   * While disconnected, a client with an offline queue (ioredis' default) would hold each
   * command for its retries: fail at once instead, and let the next request try again.
   */
  private assertConnected(): void {
    if (this.client.status !== 'ready') {
      throw new Error(`Redis connection is ${this.client.status}`);
    }
  }
}
