import { afterAll, beforeAll, describe } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  type RedisServer,
  startRedisServer,
  type StartRedisServerOptions,
} from './redis-server.js';
import { missingServer, SERVER_KINDS, type ServerKind } from './server-kinds.js';

export interface RedisServerFixture {
  readonly server: RedisServer;
  /**
   * A connection of the test's own (with the server's password, if any), to look at or clear
   * what the code under test wrote. Opened at first use: suites that never look keep to the
   * connections they open themselves.
   */
  readonly admin: Redis;
}

/**
 * One private redis-server for the calling describe (or file), so suites do not each repeat
 * the start and stop hooks. Read `server` and `admin` in tests and hooks, not while the
 * describe is defined: the server starts in a beforeAll. Hooks of one block run in the order
 * they are registered, so a later beforeAll there can use the server, but a later afterAll
 * runs once it has stopped: close what still talks to it in a nested describe, or call this
 * a block further out.
 */
export function useRedisServer(options?: StartRedisServerOptions): RedisServerFixture {
  let server: RedisServer | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer(options);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });
  return {
    get server() {
      if (!server)
        throw new Error('the Redis server starts in beforeAll: use it in tests and hooks');
      return server;
    },
    get admin() {
      admin ??= new Redis(this.server.url, { password: options?.password });
      return admin;
    },
  };
}

/** The kinds whose absence this test file has reported already. */
const reportedMissing = new Set<ServerKind>();

/**
 * A describe per server kind (`on redis`, `on valkey`), its body given the kind, for suites
 * that run on each server. Where a kind's binaries are missing (a clone without
 * ../shared/valkey-8.0.1), its describe is skipped, and one line says so.
 */
export function describeOnServers(
  body: (server: ServerKind) => void,
  kinds: readonly ServerKind[] = SERVER_KINDS,
): void {
  for (const kind of kinds) {
    const missing = missingServer(kind);
    if (missing && !reportedMissing.has(kind)) {
      reportedMissing.add(kind);
      process.stdout.write(`Skipping the suites on ${kind}: ${missing}\n`);
    }
    (missing ? describe.skip : describe)(`on ${kind}`, () => body(kind));
  }
}
