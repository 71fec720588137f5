import { once } from 'node:events';
import * as ioredis6 from 'ioredis';
import * as ioredis5 from 'ioredis5';
import * as iovalkey from 'iovalkey';
import { type IoredisModule, scriptCall } from '../../../lib/stores/redis/ioredis-commands.js';
import { useRedisServer } from '../../support/redis-fixture.js';

/**
 * lib/stores/redis/ioredis-commands.ts reaches into ioredis (its Command class, a client's
 * sendCommand and socket): held here to each major the package supports, and to iovalkey (a
 * fork of ioredis), with a client that major made.
 */
const SCRIPT = "return { KEYS[1], ARGV[1], redis.call('INCR', KEYS[1]) }";

const redis = useRedisServer();

type Client = ioredis6.Redis;
type Module = typeof ioredis6;
type Reply = [string, string, number];
const ioredis5Module = ioredis5 as unknown as Module;
const MAJORS: [string, Module][] = [
  ['ioredis 6', ioredis6],
  ['ioredis 5', ioredis5Module],
  ['iovalkey', iovalkey as unknown as Module],
];

describe.each(MAJORS)('script calls on %s', (_, module) => {
  const clients: Client[] = [];
  beforeEach(() => redis.admin.flushall());
  afterEach(() => {
    clients.splice(0).forEach((client) => client.disconnect());
  });
  const clientOf = async (from: Module, options: object = {}) => {
    const client = new from.Redis(redis.server.url, options);
    clients.push(client);
    if (client.status !== 'ready') await once(client, 'ready');
    return client;
  };
  /**
   * The adapter on `client`, once `module` has loaded (by default, once it has found the
   * installed module that made the client itself), and a count of socket writes.
   */
  const callsOn = async (client: Client, loaded?: IoredisModule) => {
    const loading = loaded && Promise.resolve(loaded);
    const call = scriptCall(client, loading);
    await (loading ?? new Promise((resolve) => setTimeout(resolve, 50)));
    const socket = client.stream as unknown as Record<'_write' | '_writev', () => void>;
    const counter = { writes: 0 };
    for (const method of ['_write', '_writev'] as const) {
      const write = socket[method];
      socket[method] = function (this: unknown, ...args: []) {
        counter.writes++;
        return write.apply(this, args);
      };
    }
    return { call, counter };
  };

  it('finds by itself the installed module whose client it is: `ioredis` (here 6) or `iovalkey`', async () => {
    const client = await clientOf(module, { enableAutoPipelining: false });
    const { call, counter } = await callsOn(client);
    await Promise.all(Array.from({ length: 10 }, (_, i) => call('eval', [SCRIPT, 1, `k${i}`, i])));
    // One write: its Command, corked; ioredis 5 here is a copy of its own (`ioredis5`).
    expect(counter.writes === 1).toBe(module !== ioredis5Module);
  });

  it('sends EVAL and EVALSHA as the client would, with its key prefix, string replies and NOSCRIPT', async () => {
    const client = await clientOf(module, { keyPrefix: 'tenant:' });
    const { call } = await callsOn(client, module);
    const sha = (await client.script('LOAD', SCRIPT)) as string;
    await expect(call('eval', [SCRIPT, 1, 'k', 7])).resolves.toEqual(['tenant:k', '7', 1]);
    await expect(call('evalsha', [sha, 1, 'k', 'x'])).resolves.toEqual(['tenant:k', 'x', 2]);
    await client.script('FLUSH');
    await expect(call('evalsha', [sha, 1, 'k', 'x'])).rejects.toThrow(/^NOSCRIPT/);
  });

  it("sends a turn's calls in one write, and leaves the socket to the client's other commands", async () => {
    // No auto-pipeline: the client's own method would write each call as it comes.
    const client = await clientOf(module, { enableAutoPipelining: false });
    const { call, counter } = await callsOn(client, module);
    const replies = Array.from({ length: 10 }, (_, i) => call('eval', [SCRIPT, 1, `k${i}`, i]));
    const ping = client.ping();
    expect(((await Promise.all(replies)) as Reply[]).map(([, argument]) => argument)).toEqual(
      Array.from({ length: 10 }, (_, i) => String(i)),
    );
    expect(await ping).toBe('PONG');
    expect(counter.writes).toBe(1);
    expect(await client.get('k3')).toBe('1');
  });

  it("gives a failed call the caller's stack under showFriendlyErrorStack", async () => {
    const client = await clientOf(module, { showFriendlyErrorStack: true });
    const { call } = await callsOn(client, module);
    await client.hset('h', 'field', '1');
    const failure = await call('eval', [SCRIPT, 1, 'h', 0]).then(
      () => undefined,
      (error: Error) => error,
    );
    expect(failure?.message).toMatch(/WRONGTYPE/);
    expect(failure?.stack).toMatch(/ioredis-commands\.spec\.ts/);
  });

  it("takes the client's own method for a client of another copy of ioredis", async () => {
    const other = module === MAJORS[0][1] ? MAJORS[1][1] : MAJORS[0][1];
    const client = await clientOf(module, { enableAutoPipelining: false });
    const { call, counter } = await callsOn(client, other);
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) => call('eval', [SCRIPT, 1, `k${i}`, i])),
    );
    expect((replies as Reply[]).map(([, argument]) => argument)).toEqual(
      Array.from({ length: 10 }, (_, i) => String(i)),
    );
    expect(counter.writes).toBeGreaterThan(1);
  });
});
