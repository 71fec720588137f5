import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Args, GraphQLModule, Mutation, Query as GraphQLQuery, Resolver } from '@nestjs/graphql';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  HttpException,
  Module,
  Query,
  UnauthorizedException,
  UseFilters,
} from '@nestjs/common';
import { INTERCEPTORS_METADATA } from '@nestjs/common/constants.js';
import { MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import {
  MemoryStore,
  RateLimit,
  RateLimitConfigError,
  RateLimiter,
  RateLimitModule,
  RateLimitOutcomeInterceptor,
  type RateLimitPolicy,
  type RefundRequest,
} from '../../lib/index.js';
import { eventually } from '../support/eventually.js';
import { KeyRecordingStore } from '../support/limiters.js';
import { startService } from '../support/tcp-service.js';
import { useRedisServer } from '../support/redis-fixture.js';
import {
  type AdapterKind,
  byClientHeader,
  RecordingLogger,
  type RunningApp,
  startApp,
} from '../support/test-app.js';

/** Global scope: RateLimiter.peek(client, policy) reads the routes' own budgets. */
const policy = (name: string, fields: Partial<RateLimitPolicy>): RateLimitPolicy => ({
  name,
  algorithm: 'fixed-window',
  limit: 3,
  window: '1m',
  scope: 'global',
  ...fields,
});
const LOGIN = policy('login', { count: 'failed' });
const PAID = policy('paid', { count: 'succeeded' });
const FILTERED = policy('filtered', { count: 'failed' });
const PICKY = policy('picky', {
  count: 'failed',
  isFailure: (_context, status) => status === 401,
});
const SLOW = policy('slow', { count: 'failed', algorithm: 'sliding-window-log' });
const PLAIN = policy('plain', {});

class Teapot extends Error {}

/** An app filter that answers a thrown Teapot with a 200: the final status decides. */
@Catch(Teapot)
class TeapotIsFine implements ExceptionFilter {
  catch(_error: Teapot, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<{
      status?: (code: number) => { send?: (body: string) => void; json?: (body: unknown) => void };
      code?: (code: number) => { send: (body: string) => void };
    }>();
    // Express' res.status(200).json(), Fastify's reply.code(200).send().
    if (response.code) response.code(200).send('fine');
    else response.status!(200).json!('fine');
  }
}

@Controller()
class LoginController {
  @Get('login')
  @RateLimit(LOGIN)
  login(@Query('password') password: string) {
    if (password !== 'right') throw new UnauthorizedException('Wrong password.');
    return 'welcome';
  }

  @Get('paid')
  @RateLimit(PAID)
  paid(@Query('ok') ok: string) {
    if (ok !== '1') throw new HttpException('Nothing to pay for.', 400);
    return 'paid';
  }

  @Get('filtered')
  @RateLimit(FILTERED)
  @UseFilters(TeapotIsFine)
  filtered() {
    throw new Teapot();
  }

  @Get('picky')
  @RateLimit(PICKY)
  picky(@Query('status') status: string) {
    throw new HttpException('As asked.', Number(status));
  }

  @Get('slow')
  @RateLimit(SLOW)
  async slow() {
    await new Promise((resolve) => setTimeout(resolve, 400));
    return 'done';
  }

  @Get('plain')
  @RateLimit(PLAIN)
  plain() {
    return 'plain';
  }
}

/** A store whose refunds fail: the response must not notice. */
class FailingRefunds extends MemoryStore {
  override refund(_request: RefundRequest): Promise<void> {
    return Promise.reject(new Error('refunds are down'));
  }
}

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])('counting by outcome over %s', (adapter) => {
  let running: RunningApp;
  let limiter: RateLimiter;
  let n = 0;
  let client: string;
  const remaining = async (p: RateLimitPolicy) =>
    (await limiter.peek(client, p)).results[0].remaining;
  /** The give-back comes after the response: wait for it. */
  const settlesAt = (p: RateLimitPolicy, expected: number) =>
    eventually(async () => (await remaining(p)) === expected);
  const status = async (path: string) => (await running.get(path, client)).status;

  beforeAll(async () => {
    running = await startApp(
      adapter,
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: `outcome-${adapter}`,
          keyBy: byClientHeader,
        }),
      ],
      [LoginController],
    );
    limiter = running.app.get(RateLimiter);
  });
  afterAll(() => running.close());
  beforeEach(() => (client = `c${++n}-${Date.now()}`));

  it("count 'failed': a success is given back after its response, failures count", async () => {
    expect(await status('/login?password=right')).toBe(200);
    await settlesAt(LOGIN, 3);
    for (let i = 0; i < 3; i++) expect(await status('/login?password=wrong')).toBe(401);
    expect(await remaining(LOGIN)).toBe(0);
    // Charged before the handler: past the limit, even the right password is refused.
    expect(await status('/login?password=wrong')).toBe(429);
    expect(await status('/login?password=right')).toBe(429);
  });

  it("count 'succeeded': a failure is given back, successes count", async () => {
    for (let i = 0; i < 3; i++) expect(await status('/paid?ok=0')).toBe(400);
    await settlesAt(PAID, 3);
    for (let i = 0; i < 3; i++) expect(await status('/paid?ok=1')).toBe(200);
    expect(await remaining(PAID)).toBe(0);
    expect(await status('/paid?ok=1')).toBe(429);
  });

  it('the final status decides: an exception an app filter answers with a 200 is a success', async () => {
    expect(await status('/filtered')).toBe(200);
    await settlesAt(FILTERED, 3);
  });

  it('isFailure decides instead of the status', async () => {
    expect(await status('/picky?status=500')).toBe(500);
    await settlesAt(PICKY, 3);
    expect(await status('/picky?status=401')).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await remaining(PICKY)).toBe(2);
  });

  it('a request whose client hangs up before the response counts as a failure', async () => {
    const abort = new AbortController();
    const hungUp = fetch(`${running.url}/slow`, {
      headers: { 'x-client': client },
      signal: abort.signal,
    }).catch(() => 'aborted');
    await new Promise((resolve) => setTimeout(resolve, 100));
    abort.abort();
    expect(await hungUp).toBe('aborted');
    expect(await status('/slow')).toBe(200);
    // The answered one is given back; the one cut short stays charged.
    await settlesAt(SLOW, 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await remaining(SLOW)).toBe(2);
  });

  it("a route whose policies all count 'all' gives nothing back", async () => {
    expect(await status('/plain')).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await remaining(PLAIN)).toBe(2);
  });
});

describe('counting by outcome, beyond the usual', () => {
  it('a refund that fails is logged, and the response goes out as ever', async () => {
    const logger = new RecordingLogger();
    const running = await startApp(
      'express',
      [RateLimitModule.forRoot({ store: new FailingRefunds(), keyBy: byClientHeader })],
      [LoginController],
      { logger },
    );
    try {
      const response = await running.get('/login?password=right', 'someone');
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('welcome');
      const givenBack = /could not give back the charge of someone \(login\): .*refunds are down/;
      await eventually(async () => logger.warnings.some((warning) => givenBack.test(warning)));
    } finally {
      await running.close();
    }
  });

  it('a store that cannot give units back stops the start of an app that counts by outcome', async () => {
    await expect(
      startApp(
        'express',
        [RateLimitModule.forRoot({ store: new KeyRecordingStore() })],
        [LoginController],
      ),
    ).rejects.toThrow(
      new RateLimitConfigError(
        `Invalid rate limit policy "login" on LoginController.login: count 'failed' needs a store that can give units back (RateLimitStore.refund), which the store in use cannot`,
      ),
    );
  });

  it('@RateLimit adds the outcome interceptor only where a policy counts by outcome', () => {
    const interceptors = (method: keyof LoginController) =>
      Reflect.getMetadata(INTERCEPTORS_METADATA, LoginController.prototype[method]) as unknown;
    expect(interceptors('login')).toEqual([RateLimitOutcomeInterceptor]);
    expect(interceptors('plain')).toBeUndefined();
  });
});

const RPC_LOGIN = policy('rpc-login', { count: 'failed' });

@Controller()
class RpcLoginController {
  @MessagePattern('login')
  @RateLimit(RPC_LOGIN)
  login(@Payload() password: string) {
    if (password !== 'right') throw new RpcException('Wrong password.');
    return 'welcome';
  }
}

describe('counting by outcome on a microservice', () => {
  it('a handler that returns is a success, one that throws a failure', async () => {
    const service = await startService(
      { redis: redis.server.url, prefix: 'outcome-rpc', keyBy: () => 'rpc-client' },
      [RpcLoginController],
    );
    const limiter = service.app.get(RateLimiter);
    const remaining = async () =>
      (await limiter.peek('rpc-client', RPC_LOGIN)).results[0].remaining;
    const send = async (password: string) => {
      const { reply, error } = await service.send('login', password);
      return reply ?? (error as { message?: string }).message;
    };
    try {
      expect(await send('right')).toBe('welcome');
      await eventually(async () => (await remaining()) === 3);
      expect(await send('wrong')).toBe('Wrong password.');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await remaining()).toBe(2);
    } finally {
      await service.close();
    }
  });
});

const GQL_LOGIN = policy('gql-login', { count: 'failed' });

@Resolver()
class LoginResolver {
  @GraphQLQuery(() => String, { nullable: true })
  health() {
    return 'ok';
  }

  @Mutation(() => String)
  @RateLimit(GQL_LOGIN)
  login(@Args('password') password: string) {
    if (password !== 'right') throw new UnauthorizedException('Wrong password.');
    return 'welcome';
  }
}

@Module({ providers: [LoginResolver] })
class LoginGraphQLModule {}

describe('counting by outcome on GraphQL', () => {
  it('a resolver that returns is a success, one that throws a failure', async () => {
    const running = await startApp(
      'express',
      [
        RateLimitModule.forRoot({
          redis: redis.server.url,
          prefix: 'outcome-gql',
          keyBy: () => 'gql-client',
        }),
        GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true }),
        LoginGraphQLModule,
      ],
      [],
    );
    const limiter = running.app.get(RateLimiter);
    const remaining = async () =>
      (await limiter.peek('gql-client', GQL_LOGIN)).results[0].remaining;
    const login = async (password: string) => {
      const response = await fetch(`${running.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: `mutation { login(password: "${password}") }` }),
      });
      const body = (await response.json()) as {
        data?: { login?: string };
        errors?: { message: string }[];
      };
      return body.data?.login ?? body.errors?.[0].message;
    };
    try {
      expect(await login('right')).toBe('welcome');
      await eventually(async () => (await remaining()) === 3);
      expect(await login('wrong')).toBe('Wrong password.');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await remaining()).toBe(2);
    } finally {
      await running.close();
    }
  });
});
