import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { packLibrary } from '../compat/fixture-app.js';
import { useRedisServer } from '../support/redis-fixture.js';

const run = promisify(execFile);
const REPO = process.cwd();

/**
 * nestjs-redis-rate-limiter/throttler as users get it: the packed tarball (of the current
 * build), in an app folder whose node_modules holds the package and the peers the app chose,
 * linked from this repository's. One app installed @nestjs/throttler and ioredis, the other
 * neither.
 */
const redis = useRedisServer();
let root: string;
const appWith = () => join(root, 'with-throttler');
const appWithout = () => join(root, 'without-throttler');

/** An app folder with the unpacked package and these peers. */
async function appFolder(dir: string, tarball: string, peers: readonly string[]) {
  const modules = join(dir, 'node_modules');
  mkdirSync(modules, { recursive: true });
  await run('tar', ['-xzf', tarball, '-C', dir]);
  renameSync(join(dir, 'package'), join(modules, 'nestjs-redis-rate-limiter'));
  for (const peer of peers) {
    mkdirSync(dirname(join(modules, peer)), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', peer), join(modules, peer));
  }
}

const PEERS = ['@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs'];

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'throttler-package-'));
  const tarball = await packLibrary();
  await appFolder(appWith(), tarball, [...PEERS, 'ioredis', '@nestjs/throttler', '@types/node']);
  await appFolder(appWithout(), tarball, PEERS);
}, 60_000);
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Runs `script` in `dir` as CommonJS or ESM; the JSON of its last stdout line. */
async function inApp(dir: string, how: 'require' | 'import', script: string) {
  const { stdout } = await run(
    process.execPath,
    [`--input-type=${how === 'import' ? 'module' : 'commonjs'}`, '-e', script],
    { cwd: dir, env: { ...process.env, REDIS_URL: redis.server.url } },
  );
  const lines = stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]) as Record<string, unknown>;
}

describe('nestjs-redis-rate-limiter/throttler from the packed package', () => {
  it.each([
    ['require', /\/dist\/cjs\/throttler\/index\.js$/],
    ['import', /\/dist\/lib\/throttler\/index\.js$/],
  ] as const)('%s: resolves to its build and counts on Redis', async (how, file) => {
    const load =
      how === 'require'
        ? `const { RedisThrottlerStorage } = require('nestjs-redis-rate-limiter/throttler');
           const file = require.resolve('nestjs-redis-rate-limiter/throttler');`
        : `const { RedisThrottlerStorage } = await import('nestjs-redis-rate-limiter/throttler');
           const file = import.meta.resolve('nestjs-redis-rate-limiter/throttler');`;
    const result = await inApp(
      appWith(),
      how,
      `(async () => {
         ${load}
         const storage = new RedisThrottlerStorage(process.env.REDIS_URL, { prefix: '${how}' });
         await storage.onModuleInit();
         const hits = [];
         for (let i = 0; i < 3; i++) hits.push(await storage.increment('k', 60000, 2, 0, 'default'));
         await storage.onApplicationShutdown();
         console.log(JSON.stringify({ file, hits: hits.map((h) => [h.totalHits, h.isBlocked]) }));
       })();`,
    );
    expect(result.file).toMatch(file);
    expect(result.hits).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
  });

  it.each(['require', 'import'] as const)(
    '%s: both entries load in an app without @nestjs/throttler or ioredis; a URL then fails the start with RateLimitConfigError',
    async (how) => {
      const load = (entry: string) =>
        how === 'require' ? `require('${entry}')` : `await import('${entry}')`;
      const script = `(async () => {
        const main = ${load('nestjs-redis-rate-limiter')};
        const throttler = ${load('nestjs-redis-rate-limiter/throttler')};
        const storage = new throttler.RedisThrottlerStorage(process.env.REDIS_URL);
        const start = await storage.onModuleInit().then(() => 'started', (error) => error.name + ': ' + error.message);
        console.log(JSON.stringify({
          main: typeof main.RateLimitModule,
          storage: typeof throttler.RedisThrottlerStorage,
          start,
        }));
      })();`;
      expect(await inApp(appWithout(), how, script)).toEqual({
        main: 'function',
        storage: 'function',
        start: expect.stringMatching(/^RateLimitConfigError: .*npm install ioredis/),
      });
    },
  );

  /** `module` and `moduleResolution` as apps set them: CommonJS (Nest's CLI), NodeNext, bundler. */
  it.each([
    ['commonjs', 'node10'],
    ['nodenext', 'nodenext'],
    ['esnext', 'bundler'],
  ])(
    'types: storage and options compile in ThrottlerModule.forRoot (module %s, moduleResolution %s)',
    async (module, moduleResolution) => {
      writeFileSync(
        join(appWith(), 'check.ts'),
        `import { ThrottlerModule } from '@nestjs/throttler';
         import { RedisThrottlerStorage, type RedisThrottlerStorageOptions } from 'nestjs-redis-rate-limiter/throttler';
         const options: RedisThrottlerStorageOptions = { prefix: 'app', timeout: 50, failureMode: 'closed' };
         export const throttler = ThrottlerModule.forRoot({
           throttlers: [{ name: 'short', ttl: 1000, limit: 3 }],
           storage: new RedisThrottlerStorage('redis://localhost:6379', options),
         });
         // Step 0 of the migration guide: REDIS_URL may be unset (throttler's in-memory storage).
         export const fromEnv = new RedisThrottlerStorage(process.env.REDIS_URL, options);
         // @ts-expect-error 'local' is RateLimitModule's alone
         new RedisThrottlerStorage('redis://localhost:6379', { failureMode: 'local' });`,
      );
      await run(
        process.execPath,
        [
          join(REPO, 'node_modules', 'typescript', 'bin', 'tsc'),
          '--noEmit',
          '--strict',
          '--experimentalDecorators',
          '--skipLibCheck',
          '--ignoreDeprecations',
          '6.0',
          '--types',
          'node',
          '--module',
          module,
          '--moduleResolution',
          moduleResolution,
          'check.ts',
        ],
        { cwd: appWith() },
      );
    },
  );
});
