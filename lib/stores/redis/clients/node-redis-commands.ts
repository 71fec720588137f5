/**
 * What the node-redis adapters share: a raw command built from the store's arguments, with
 * the client's key prefix on its keys, and the options that make its reply plain strings
 * and numbers.
 */

/** node-redis' own word for a command's argument. */
export type RedisArgument = string | Buffer;

/**
 * The options of every command the store sends. Replies as RESP gives them (strings, numbers,
 * arrays) whatever type mapping the app set on its client (`withTypeMapping`): the store reads
 * an admission as the number 1, which a mapping of numbers to strings would turn into '1'.
 * And no per-command timeout (node-redis 6 gives each command 5 s by default, through an
 * AbortSignal and a timer of its own: two thirds of the client's CPU per decision,
 * bench:decide): the store's deadline is the decision's timeout, far shorter, and a command
 * it gave up on is answered or failed with its connection, as on ioredis.
 */
export const STORE_COMMAND_OPTIONS = Object.freeze({ typeMapping: Object.freeze({}), timeout: 0 });

/** Prefixes a key as node-redis' own commands do (its `keyPrefix` option, v6). */
export function prefixed(prefix: RedisArgument | undefined, key: string): RedisArgument {
  if (prefix === undefined || prefix.length === 0) return key;
  return typeof prefix === 'string' ? prefix + key : Buffer.concat([prefix, Buffer.from(key)]);
}

/**
 * EVAL or EVALSHA with [script or sha, key count, ...keys, ...arguments] as node-redis sends
 * it: every argument a string (it writes nothing else), the keys prefixed.
 */
export function scriptCommand(
  name: 'eval' | 'evalsha',
  args: readonly (string | number)[],
  prefix: RedisArgument | undefined,
): RedisArgument[] {
  const command = new Array<RedisArgument>(args.length + 1);
  command[0] = name === 'eval' ? 'EVAL' : 'EVALSHA';
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    command[i + 1] = typeof arg === 'string' ? arg : String(arg);
  }
  if (prefix !== undefined) {
    const keys = Number(args[1]);
    for (let i = 3; i < 3 + keys; i++) command[i] = prefixed(prefix, command[i] as string);
  }
  return command;
}

/** A node-redis client's connection state in a word. */
export const stateOf = ({ isReady, isOpen }: { isReady: boolean; isOpen: boolean }): string =>
  isReady ? 'ready' : isOpen ? 'connecting' : 'closed';

/** What the adapters use of node-redis' EventEmitter. */
export interface Emitter {
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

/** Listens to each of `events`; returns the undo. */
export function listen(
  emitter: Emitter,
  events: readonly string[],
  listener: (...args: never[]) => void,
): () => void {
  for (const event of events) emitter.on(event, listener);
  return () => {
    for (const event of events) emitter.off(event, listener);
  };
}
