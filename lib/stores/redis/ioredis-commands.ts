import type { Writable } from 'node:stream';
import type { Cluster, Redis } from 'ioredis';

/** EVAL or EVALSHA with its arguments (copied: the caller may use the array again). */
export type ScriptCall = (
  name: 'eval' | 'evalsha',
  args: readonly (string | number)[],
) => Promise<unknown>;

/** What this file uses of ioredis' Command class, the same in ioredis 5 and 6. */
type CommandClass = new (
  name: string,
  args: readonly (string | number)[],
  options: { replyEncoding: 'utf8'; keyPrefix: string | undefined; errorStack?: Error },
) => { readonly promise: Promise<unknown> };

/** What this file uses of the ioredis module. */
export interface IoredisModule {
  readonly Redis: abstract new (...args: never[]) => unknown;
  readonly Command: unknown;
}

/**
 * How the store sends its scripts. On a standalone client, as a Command of its own rather
 * than through the client's method: that skips the auto-pipeline, which wraps each call in
 * a pipeline's promises, callbacks and result arrays, and so nearly halves the client's CPU
 * per decision (bench:decide). The socket stays corked until the next check phase of the
 * event loop, where the auto-pipeline would flush too, so that a turn's calls still leave in
 * one write. iovalkey, a fork of ioredis, keeps the same Command class, `sendCommand` and
 * `stream`: its clients take the same path with its own Command. A Cluster client routes by
 * slot itself and gets its own method; so does a client made by another copy of ioredis
 * than `ioredis` or `iovalkey` (loaded here, not imported, so that the package loads
 * without them), whose Command class is not that copy's, and every client until the module
 * has loaded (within the first turns).
 *
 * The one place that depends on ioredis internals, held to ioredis 5 and 6 and iovalkey by
 * test/stores/redis/ioredis-commands.spec.ts: the Command class, the client's `sendCommand`
 * and its socket, `stream`.
 */
export function scriptCall(client: Redis | Cluster, ioredis?: Promise<IoredisModule>): ScriptCall {
  let send: ScriptCall = (name, args) => (client as Redis)[name](...(args as [string, number]));
  if (!client.isCluster) {
    (ioredis ?? moduleOf(client)).then(
      (module) => {
        if (client instanceof module.Redis)
          send = direct(client as Redis, module.Command as CommandClass);
      },
      () => undefined,
    );
  }
  return (name, args) => send(name, args);
}

/** ioredis or iovalkey, whichever made `client` (rejects if neither is installed or did). */
async function moduleOf(client: Redis | Cluster): Promise<IoredisModule> {
  for (const load of [() => import('ioredis'), () => import('iovalkey')]) {
    const module: IoredisModule | undefined = await load().catch(() => undefined);
    if (module && client instanceof module.Redis) return module;
  }
  throw new Error('made by neither ioredis nor iovalkey as installed');
}

function direct(redis: Redis, Command: CommandClass): ScriptCall {
  // What the client's own methods give each Command: string replies, its key prefix.
  const options = { replyEncoding: 'utf8' as const, keyPrefix: redis.options.keyPrefix };
  // showFriendlyErrorStack: each command then records where it was sent from.
  const friendlyStacks = redis.options.showFriendlyErrorStack === true;
  let corked: Writable | undefined;
  const uncork = () => {
    const stream = corked;
    corked = undefined;
    stream?.uncork();
  };
  return (name, args) => {
    const command = new Command(
      name,
      args,
      friendlyStacks ? { ...options, errorStack: new Error() } : options,
    );
    const stream: Writable | undefined = redis.stream;
    if (stream && corked !== stream) {
      // A new socket within the turn (a reconnect): the old one goes at once.
      if (corked) corked.uncork();
      else setImmediate(uncork);
      stream.cork();
      corked = stream;
    }
    redis.sendCommand(command as Parameters<Redis['sendCommand']>[0]);
    return command.promise;
  };
}
