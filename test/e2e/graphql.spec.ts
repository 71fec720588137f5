import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { type DynamicModule, Module } from '@nestjs/common';
import { GraphQLModule, Mutation, Query, Resolver } from '@nestjs/graphql';
import { MercuriusDriver, type MercuriusDriverConfig } from '@nestjs/mercurius';
import {
  RateLimit,
  RateLimitExceededException,
  RateLimitModule,
  type RateLimitModuleOptions,
  SkipRateLimit,
} from '../../lib/index.js';
import { KeyRecordingStore, withRedisDown } from '../support/limiters.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { untilWindowHasRoom } from '../support/redis-server.js';
import { type AdapterKind, type RunningApp, startApp } from '../support/test-app.js';

@Resolver()
class BooksResolver {
  @Query(() => String, { nullable: true })
  @RateLimit({ algorithm: 'fixed-window', limit: 2, window: '1m' })
  book() {
    return 'Dune';
  }

  @Query(() => String, { nullable: true })
  @SkipRateLimit()
  health() {
    return 'ok';
  }

  @Query(() => String, { nullable: true })
  unannotated() {
    return 'ok';
  }

  /** Denied by the app itself, as after a RateLimiter call of its own. */
  @Query(() => String, { nullable: true })
  @SkipRateLimit()
  quota() {
    throw new RateLimitExceededException('Monthly quota spent.', 7);
  }

  @Mutation(() => String, { nullable: true })
  @RateLimit({ name: 'writes', algorithm: 'fixed-window', limit: 1, window: '1h' })
  addBook() {
    return 'added';
  }
}

@Module({ providers: [BooksResolver] })
class BooksModule {}

interface GraphQLReply {
  status: number;
  headers: Headers;
  data: Record<string, unknown> | null;
  errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[];
}

/** A GraphQL client over HTTP: POST /graphql with a JSON body, as Apollo Client and urql send. */
async function graphql(running: RunningApp, query: string): Promise<GraphQLReply> {
  const response = await fetch(`${running.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query }),
  });
  const body = (await response.json()) as Omit<GraphQLReply, 'status' | 'headers'>;
  return { status: response.status, headers: response.headers, ...body };
}

const drivers: [string, AdapterKind, () => DynamicModule][] = [
  [
    'Apollo on Express',
    'express',
    () => GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
  ],
  [
    'Apollo on Fastify, the reply in the context',
    'fastify',
    () =>
      GraphQLModule.forRoot<ApolloDriverConfig>({
        driver: ApolloDriver,
        autoSchemaFile: true,
        context: (request: unknown, reply: unknown) => ({ req: request, reply }),
      }),
  ],
  [
    'Mercurius on Fastify',
    'fastify',
    () =>
      GraphQLModule.forRoot<MercuriusDriverConfig>({
        driver: MercuriusDriver,
        autoSchemaFile: true,
      }),
  ],
];

const redis = useRedisServer();

let apps = 0;
describe.each(drivers)('GraphQL with %s', (_name, adapter, graphQLModule) => {
  const boot = (options: RateLimitModuleOptions = {}) =>
    startApp(
      adapter,
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `gql-${++apps}-${Date.now()}`,
          policies: [{ limit: 3, window: '1m' }],
          ...options,
        }),
        graphQLModule(),
        BooksModule,
      ],
      [],
    );

  describe('limiting', () => {
    let running: RunningApp;
    beforeAll(async () => {
      running = await boot();
    });
    afterAll(() => running.close());

    it('limits a query to its limit, then answers a RATE_LIMITED error with retryAfter and the HTTP headers', async () => {
      // The three queries in one fixed window of 'book' on Redis's clock.
      await untilWindowHasRoom(redis.server, 60_000);
      const admitted = [await graphql(running, '{ book }'), await graphql(running, '{ book }')];
      expect(admitted.map((reply) => reply.data)).toEqual([{ book: 'Dune' }, { book: 'Dune' }]);
      expect(admitted[1].headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
      expect(admitted[1].headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);

      const denied = await graphql(running, '{ book }');
      expect(denied.data).toEqual({ book: null });
      expect(denied.errors).toEqual([
        expect.objectContaining({
          message: expect.stringContaining('Rate limit exceeded ("default")'),
          path: ['book'],
          extensions: expect.objectContaining({
            code: 'RATE_LIMITED',
            retryAfter: expect.any(Number),
          }),
        }),
      ]);
      const retryAfter = denied.errors![0].extensions!.retryAfter as number;
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(denied.headers.get('retry-after')).toBe(String(retryAfter));
      expect(denied.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
    });

    it('limits a mutation under its own policy', async () => {
      // Both mutations in one fixed window of 'writes' (an hour) on Redis's clock.
      await untilWindowHasRoom(redis.server, 3_600_000);
      expect((await graphql(running, 'mutation { addBook }')).data).toEqual({ addBook: 'added' });
      const denied = await graphql(running, 'mutation { addBook }');
      expect(denied.data).toEqual({ addBook: null });
      expect(denied.errors?.[0].extensions).toMatchObject({ code: 'RATE_LIMITED' });
      expect(denied.errors?.[0].message).toContain('"writes"');
      expect(denied.headers.get('ratelimit-policy')).toBe('"writes";q=1;w=3600');
    });

    it('answers a RateLimitExceededException thrown by a resolver as the same GraphQL error', async () => {
      const denied = await graphql(running, '{ quota }');
      expect(denied.data).toEqual({ quota: null });
      expect(denied.errors?.[0]).toMatchObject({
        message: 'Monthly quota spent.',
        extensions: { code: 'RATE_LIMITED', retryAfter: 7 },
      });
      expect(denied.headers.get('retry-after')).toBe('7');
    });

    it('applies module policies to resolvers without @RateLimit, and skips what is skipped', async () => {
      const results = [];
      for (let i = 0; i < 4; i++) results.push((await graphql(running, '{ unannotated }')).data);
      expect(results).toEqual([
        { unannotated: 'ok' },
        { unannotated: 'ok' },
        { unannotated: 'ok' },
        { unannotated: null },
      ]);
      for (let i = 0; i < 4; i++) {
        expect(await graphql(running, '{ health }')).toMatchObject({ data: { health: 'ok' } });
      }
    });
  });

  it('keys the client by the IP of the HTTP request that carried the operation', async () => {
    const store = new KeyRecordingStore();
    const running = await boot({ store });
    try {
      await graphql(running, '{ book }');
      expect(store.keys).toEqual([
        expect.stringMatching(/^gql-\d+-\d+:\{127\.0\.0\.1\}:default:.*:BooksResolver\.book$/),
      ]);
    } finally {
      await running.close();
      await store.close();
    }
  });

  it('fails open or closed as over HTTP when Redis is down', async () => {
    await withRedisDown(boot, async (open, closed) => {
      expect((await graphql(open, '{ book }')).data).toEqual({ book: 'Dune' });
      const unavailable = await graphql(closed, '{ book }');
      expect(unavailable.data).toEqual({ book: null });
      expect(unavailable.errors?.[0].extensions).toMatchObject({
        code: 'RATE_LIMIT_UNAVAILABLE',
        retryAfter: 1,
      });
      expect(unavailable.headers.get('retry-after')).toBe('1');
    });
  });

  it("leaves resolvers alone when contextTypes does not include 'graphql'", async () => {
    const running = await boot({ contextTypes: ['http'] });
    try {
      for (let i = 0; i < 3; i++) {
        expect((await graphql(running, '{ book }')).data).toEqual({ book: 'Dune' });
      }
    } finally {
      await running.close();
    }
  });
});
