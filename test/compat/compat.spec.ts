import { join } from 'node:path';
import { startRedisServer } from '../support/redis-server.js';
import { childEnv, packLibrary, prepareFixture, run, startFixtureApp } from './fixture-app.js';

interface Fixture {
  readonly title: string;
  readonly dir: string;
  /** The `module` setting of its tsconfig.json, which builds it. */
  readonly module: string;
  /**
   * Further settings, each a tsconfig.<setting>.json that type-checks without emitting. One
   * that turns skipLibCheck off checks src/typings.ts only: the package's declarations against
   * this app's Nest and ioredis types, without the GraphQL packages' own declarations.
   */
  readonly typeChecks: readonly string[];
  /** Its own tests, if it has any: runner, node arguments, and the summary when both passed. */
  readonly ownTests?: {
    readonly runner: string;
    readonly args: readonly string[];
    readonly passed: RegExp;
  };
}

/**
 * Apps as teams have them (test/compat/<dir>), each with its own package.json and lockfile,
 * installing the library from its `npm pack` tarball.
 */
const FIXTURES: readonly Fixture[] = [
  {
    title: 'Nest 11, CommonJS, Express, ioredis 5, TypeScript 5.9',
    dir: 'nest11-cjs-express-ioredis5',
    module: 'commonjs',
    typeChecks: ['nodenext', 'bundler'],
    ownTests: {
      runner: 'Jest (CommonJS)',
      args: ['node_modules/jest/bin/jest.js', '--ci'],
      passed: /^Tests:\s+2 passed, 2 total$/m,
    },
  },
  {
    title: 'Nest 12, ESM, Fastify, ioredis 6, TypeScript 6.0',
    dir: 'nest12-esm-fastify-ioredis6',
    module: 'nodenext',
    typeChecks: ['node16', 'bundler'],
    ownTests: {
      runner: 'node:test (ESM)',
      args: ['--test', 'dist/test/app.e2e-spec.js'],
      passed: /^# pass 2\n# fail 0$/m,
    },
  },
  {
    title: 'Nest 12 through require(esm), CommonJS, Express, ioredis 6, TypeScript 6.0',
    dir: 'nest12-cjs-express-ioredis6',
    module: 'nodenext',
    typeChecks: ['commonjs'],
  },
];

/** The fixtures' route: `@RateLimit({ limit: 3, window: '1m' })`. */
const LIMIT = 3;
/** Installs download from the npm registry on a fresh clone; later runs reuse them. */
const INSTALL_TIMEOUT_MS = 10 * 60_000;
const STEP_TIMEOUT_MS = 120_000;

let tarball: Promise<string> | undefined;

/** Loads the package as HOW says, starts a module on it, and says so. */
const LOAD_AND_START = `
  const { Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  (async () => {
    const { RateLimitModule } =
      process.env.HOW === 'import'
        ? await import('nestjs-redis-rate-limiter')
        : require('nestjs-redis-rate-limiter');
    class AppModule {}
    Module({ imports: [RateLimitModule.forRoot({})] })(AppModule);
    const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error'] });
    await app.close();
    console.log('started through ' + process.env.HOW);
  })();`;

/** Loads the package as HOW says and starts a module given a URL; prints what the start threw. */
const START_WITH_URL = `
  const { Module } = require('@nestjs/common');
  const { NestFactory } = require('@nestjs/core');
  (async () => {
    const { RateLimitConfigError, RateLimitModule } =
      process.env.HOW === 'import'
        ? await import('nestjs-redis-rate-limiter')
        : require('nestjs-redis-rate-limiter');
    class AppModule {}
    Module({ imports: [RateLimitModule.forRoot({ redis: 'redis://127.0.0.1:1' })] })(AppModule);
    try {
      const app = await NestFactory.createApplicationContext(AppModule, {
        logger: false,
        abortOnError: false,
      });
      await app.close();
      console.log(JSON.stringify({ configError: false, message: 'started' }));
    } catch (error) {
      const configError = error instanceof RateLimitConfigError;
      console.log(JSON.stringify({ configError, message: String(error.message) }));
    }
  })();`;

/** Runs LOAD_AND_START in the app at `dir`, loading the package through `how`. */
const loadAndStart = (dir: string, how: string) =>
  run(
    process.execPath,
    ['--input-type=commonjs', '-e', LOAD_AND_START],
    dir,
    childEnv({ HOW: how }),
  );

describe.each(FIXTURES)('compatibility: $title', (fixture) => {
  let dir: string;
  const tsc = (tsconfig: string) =>
    run(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig], dir);

  beforeAll(async () => {
    tarball ??= packLibrary();
    dir = await prepareFixture(fixture.dir, await tarball);
  }, INSTALL_TIMEOUT_MS);

  it(`builds with tsc under module ${fixture.module}`, () => tsc('tsconfig.json'), STEP_TIMEOUT_MS);

  it.each(fixture.typeChecks)(
    'type-checks under module %s',
    (setting) => tsc(`tsconfig.${setting}.json`),
    STEP_TIMEOUT_MS,
  );

  it.each(['import', 'require'])(
    "starts RateLimitModule on this app's Nest and ioredis when loaded through %s",
    async (how) => {
      const { stdout } = await loadAndStart(dir, how);
      expect(stdout).toContain(`started through ${how}`);
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'boots from its build, limits a route and a GraphQL query to exactly their limit with IETF headers, fails open when Redis is killed',
    async () => {
      const redis = await startRedisServer();
      const app = await startFixtureApp(dir, { REDIS_URL: redis.url });
      const route = () => fetch(`${app.url}/limited`);
      const query = () =>
        fetch(`${app.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: '{ book }' }),
        });
      try {
        const responses: Response[] = [];
        for (let i = 0; i <= LIMIT; i++) responses.push(await route());
        expect(responses.map((response) => response.status)).toEqual([200, 200, 200, 429]);
        const [first, , , denied] = responses;
        expect(first.headers.get('ratelimit-policy')).toBe(`"default";q=${LIMIT};w=60`);
        expect(first.headers.get('ratelimit')).toMatch(/^"default";r=2;t=\d+$/);
        expect(denied.headers.get('ratelimit')).toMatch(/^"default";r=0;t=\d+$/);
        expect(Number(denied.headers.get('retry-after'))).toBeGreaterThan(0);

        const replies: Response[] = [];
        for (let i = 0; i <= LIMIT; i++) replies.push(await query());
        const bodies = (await Promise.all(replies.map((reply) => reply.json()))) as {
          data: { book: string | null };
          errors?: { extensions?: { code?: string } }[];
        }[];
        expect(bodies.map((body) => body.data.book)).toEqual(['Dune', 'Dune', 'Dune', null]);
        expect(bodies[LIMIT].errors?.[0].extensions?.code).toBe('RATE_LIMITED');
        expect(replies[0].headers.get('ratelimit')).toMatch(/^"default";r=2;t=\d+$/);

        // Spent without a denial: no denial is known for /other.
        for (let i = 0; i < LIMIT; i++) await fetch(`${app.url}/other`);
        await redis.kill();
        const afterKill: number[] = [];
        for (let i = 0; i < LIMIT; i++) afterKill.push((await fetch(`${app.url}/other`)).status);
        // The budget is spent, so only failing open can admit these; the denial the pod
        // already knows on /limited still holds (its deny cache).
        expect(afterKill).toEqual([200, 200, 200]);
        expect((await route()).status).toBe(429);
      } finally {
        await app.stop();
        await redis.stop();
      }
    },
    STEP_TIMEOUT_MS,
  );

  const { ownTests } = fixture;
  if (ownTests) {
    it(
      `passes its own ${ownTests.runner} tests: the route limited in-process, and admitted once overrideProvider(RateLimitGuard) replaces the guard`,
      async () => {
        const redis = await startRedisServer();
        try {
          const { stdout, stderr } = await run(
            process.execPath,
            ownTests.args,
            dir,
            childEnv({ REDIS_URL: redis.url }),
          );
          expect(stdout + stderr).toMatch(ownTests.passed);
        } finally {
          await redis.stop();
        }
      },
      STEP_TIMEOUT_MS,
    );
  }
});

/**
 * An app with no Redis client installed (ioredis is an optional peer) and its own src (the
 * shared app needs ioredis' Redis and GraphQL): `RateLimitModule.forRoot({})` limits on the
 * embedded store.
 */
describe('compatibility: Nest 11, CommonJS, Express, no Redis client (embedded store), TypeScript 5.9', () => {
  let dir: string;

  beforeAll(async () => {
    tarball ??= packLibrary();
    dir = await prepareFixture('nest11-cjs-express-embedded', await tarball, {
      sharedApp: false,
    });
  }, INSTALL_TIMEOUT_MS);

  it(
    'builds with tsc under module commonjs',
    () =>
      run(
        process.execPath,
        [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'],
        dir,
      ),
    STEP_TIMEOUT_MS,
  );

  it('has no ioredis to load: require.resolve fails in its folder', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '-e',
        `try { console.log('resolved ' + require.resolve('ioredis')); }
         catch (error) { console.log(error.code); }`,
      ],
      dir,
    );
    expect(stdout.trim()).toBe('MODULE_NOT_FOUND');
  });

  it.each(['import', 'require'])(
    'starts RateLimitModule.forRoot({}) without ioredis when loaded through %s',
    async (how) => {
      const { stdout } = await loadAndStart(dir, how);
      expect(stdout).toContain(`started through ${how}`);
    },
    STEP_TIMEOUT_MS,
  );

  it.each(['import', 'require'])(
    'fails the start with a RateLimitConfigError naming ioredis when given a URL, loaded through %s',
    async (how) => {
      const { stdout } = await run(
        process.execPath,
        ['--input-type=commonjs', '-e', START_WITH_URL],
        dir,
        childEnv({ HOW: how }),
      );
      const result = JSON.parse(stdout) as { configError: boolean; message: string };
      expect(result.configError).toBe(true);
      expect(result.message).toMatch(
        /option redis: .*need the ioredis package \(npm install ioredis\)/,
      );
    },
    STEP_TIMEOUT_MS,
  );

  it(
    'boots from its build, limits a route to exactly its limit, and warns at start that limits are per process',
    async () => {
      const app = await startFixtureApp(dir, {});
      try {
        const statuses: number[] = [];
        for (let i = 0; i <= LIMIT; i++) statuses.push((await fetch(`${app.url}/limited`)).status);
        expect(statuses).toEqual([200, 200, 200, 429]);
        expect(app.output()).toContain('limits are per process');
      } finally {
        await app.stop();
      }
    },
    STEP_TIMEOUT_MS,
  );
});

/**
 * Apps whose only Redis client is another library than ioredis, made and owned by the app and
 * handed to the module (their own src: the shared app makes its client from a URL, with
 * ioredis). Strict, with skipLibCheck off: the package's declarations compile without ioredis.
 */
describe.each([
  {
    title: 'Nest 11, CommonJS, Express, only node-redis 6 (`redis`), TypeScript 5.9',
    dir: 'nest11-cjs-express-node-redis6',
    client: 'redis',
    absent: ['ioredis', 'iovalkey'],
  },
  {
    title: 'Nest 11, CommonJS, Express, only iovalkey, TypeScript 5.9',
    dir: 'nest11-cjs-express-iovalkey',
    client: 'iovalkey',
    absent: ['ioredis', 'redis'],
  },
  {
    title: 'Nest 11, CommonJS, Express, only Valkey GLIDE, TypeScript 5.9',
    dir: 'nest11-cjs-express-glide',
    client: '@valkey/valkey-glide',
    absent: ['ioredis', 'iovalkey', 'redis'],
  },
])('compatibility: $title', ({ dir: name, client, absent }) => {
  let dir: string;
  const tsc = (tsconfig: string) =>
    run(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', tsconfig], dir);

  beforeAll(async () => {
    tarball ??= packLibrary();
    dir = await prepareFixture(name, await tarball, { sharedApp: false });
  }, INSTALL_TIMEOUT_MS);

  it(
    'builds with tsc under module commonjs (strict, skipLibCheck off)',
    () => tsc('tsconfig.json'),
    STEP_TIMEOUT_MS,
  );

  it('type-checks under module nodenext', () => tsc('tsconfig.nodenext.json'), STEP_TIMEOUT_MS);

  it(`has ${client} and no other Redis client installed`, async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '-e',
        `for (const name of process.argv.slice(1)) {
           try { require.resolve(name); console.log(name + ' found'); }
           catch (error) { console.log(name + ' ' + error.code); }
         }`,
        client,
        ...absent,
      ],
      dir,
    );
    expect(stdout.trim().split('\n')).toEqual([
      `${client} found`,
      ...absent.map((other) => `${other} MODULE_NOT_FOUND`),
    ]);
  });

  it(
    'two instances of it sharing one Redis admit exactly 3 between them, then 429',
    async () => {
      const redis = await startRedisServer();
      const apps = await Promise.all([
        startFixtureApp(dir, { REDIS_URL: redis.url }),
        startFixtureApp(dir, { REDIS_URL: redis.url }),
      ]);
      try {
        const statuses: number[] = [];
        for (let i = 0; i <= LIMIT + 1; i++) {
          statuses.push((await fetch(`${apps[i % 2].url}/limited`)).status);
        }
        expect(statuses).toEqual([200, 200, 200, 429, 429]);
        for (const app of apps) {
          expect(app.output()).toContain(`Deciding on Redis at 127.0.0.1:${redis.port}`);
        }
      } finally {
        await Promise.all(apps.map((app) => app.stop()));
        await redis.stop();
      }
    },
    STEP_TIMEOUT_MS,
  );
});
