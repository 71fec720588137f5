import { afterAll, beforeAll } from '@jest/globals';
import { Redis } from 'ioredis';
import {
  type RedisServer,
  startRedisServer,
  type StartRedisServerOptions,
} from './redis-server.js';

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
