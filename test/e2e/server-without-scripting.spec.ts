import { Controller, Get } from '@nestjs/common';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  type RateLimitModuleOptions,
} from '../../lib/index.js';
import {
  type ClientUnderTest,
  clientOf,
  CLIENTS_ON,
  CLUSTER_CLIENTS_ON,
  clusterClientOf,
} from '../support/redis-clients.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import { describeOnServers, useRedisServer } from '../support/redis-fixture.js';
import { sendRawCommand } from '../support/redis-server.js';
import { byClientHeader, sequentially, startApp, withApp } from '../support/test-app.js';

/** A server built without Lua (Valkey can be) knows none of these; renamed away, neither does this one. */
const WITHOUT_SCRIPTING = ['EVAL', 'EVALSHA', 'SCRIPT'].flatMap((command) => [
  '--rename-command',
  command,
  '',
]);

@Controller()
class LimitedController {
  @Get()
  @RateLimit({ limit: 2, window: '1h' })
  limited() {
    return 'ok';
  }
}

const start = (options: RateLimitModuleOptions) =>
  startApp(
    'express',
    [RateLimitModule.forRoot({ keyBy: byClientHeader, ...options })],
    [LimitedController],
  );

/** Each client words the server's refusal its own way (GLIDE: "ResponseError: unknown command 'EVAL'"). */
const NO_SCRIPTING = /runs no Lua scripts \(EVAL: .*unknown command 'eval'/i;

/** The start with a client the app made fails, saying why; the client stays the app's. */
async function expectStartRefused(made: ClientUnderTest): Promise<void> {
  try {
    await made.ready();
    const starting = start({ redis: made.client });
    await expect(starting).rejects.toThrow(RateLimitConfigError);
    await expect(starting).rejects.toThrow(NO_SCRIPTING);
  } finally {
    await made.close();
  }
}

/**
 * Every decision is a Lua script: on a server without scripting, the start fails with a
 * RateLimitConfigError that says so, through every client, rather than the app failing open
 * at the first request. A server merely unreachable at start still lets the app start.
 */
describeOnServers((server) =>
  describe('a server without Lua scripting', () => {
    const redis = useRedisServer({ server, extraArgs: WITHOUT_SCRIPTING });

    it('fails the start given a URL, and closes the connection the module opened', async () => {
      const starting = start({ redis: redis.server.url });
      await expect(starting).rejects.toThrow(RateLimitConfigError);
      await expect(starting).rejects.toThrow(NO_SCRIPTING);
      await expect(starting).rejects.toThrow(`at 127.0.0.1:${redis.server.port}`);
      // Only this probe's own connection is left.
      const clients = await sendRawCommand(redis.server.port, ['CLIENT', 'LIST']);
      expect(clients.trim().split('\n')).toHaveLength(1);
    });

    it.each(CLIENTS_ON[server])(
      'fails the start given a %s client, which it leaves open',
      async (name) => expectStartRefused(await clientOf(name, redis.server.url)),
    );

    describe('on a Cluster', () => {
      let cluster: RedisClusterHandle;
      beforeAll(async () => {
        cluster = await startRedisCluster(3, { server, extraArgs: WITHOUT_SCRIPTING });
      }, 60_000);
      afterAll(() => cluster?.stop());

      it.each(CLUSTER_CLIENTS_ON[server])('fails the start given a %s', async (name) =>
        expectStartRefused(await clusterClientOf(name, cluster.nodes)),
      );
    });
  }),
);

describe('the scripting check at start', () => {
  const redis = useRedisServer();
  const STALL_MS = 4_000;

  it('lets the app start on a server that does not answer it within 2 s, as before the check', async () => {
    const made = await clientOf('ioredis 6', redis.server.url);
    try {
      await made.ready();
      // Stopped with the client ready: the check is sent and goes unanswered.
      await redis.server.pause(STALL_MS);
      const stalledAt = performance.now();
      await withApp(start({ redis: made.client }), async (running) => {
        // Started while the server still slept.
        expect(performance.now() - stalledAt).toBeLessThan(STALL_MS);
        await new Promise((resolve) =>
          setTimeout(resolve, STALL_MS + 100 - (performance.now() - stalledAt)),
        );
        expect(await sequentially(3, () => running.get('/', 'after-the-stall'))).toEqual([
          200, 200, 429,
        ]);
      });
    } finally {
      await made.close();
    }
  });
});
