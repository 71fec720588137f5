import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The transports' packages, which the library reaches for only when a handler of theirs is
 * limited, OpenTelemetry's only with the `metrics` option, @nestjs/throttler never (only the
 * nestjs-redis-rate-limiter/throttler entry names it, for its types), and the Redis clients'
 * only for a `redis` option (Valkey GLIDE's never: the app's client is used by its methods,
 * and no GLIDE `Script` is made); @nestjs/swagger only as an app starts, and @nestjs/terminus
 * never (RateLimitHealthIndicator answers in its format without it).
 */
const OPTIONAL =
  /\/node_modules\/(graphql|@nestjs\/(graphql|websockets|microservices|throttler|swagger|terminus)|@opentelemetry\/[^/]+|ioredis|iovalkey|redis|@redis\/[^/]+|@valkey\/[^/]+)\//;

/**
 * Loads the built package in a fresh Node process, one way, then `@nestjs/websockets` as a
 * control, and prints which optional packages each step loaded.
 */
async function loadedPackages(how: 'import' | 'require') {
  const common = `
    const optional = (files) => [...new Set(files.filter((file) => ${OPTIONAL}.test(file))
      .map((file) => file.match(${OPTIONAL})[1]))].sort();`;
  const script =
    how === 'require'
      ? `${common}
         require('nestjs-redis-rate-limiter');
         const library = optional(Object.keys(require.cache));
         require('@nestjs/websockets');
         console.log(JSON.stringify({ library, control: optional(Object.keys(require.cache)) }));`
      : `${common}
         import { register } from 'node:module';
         import { MessageChannel } from 'node:worker_threads';
         const { port1, port2 } = new MessageChannel();
         const seen = [];
         port1.on('message', (url) => seen.push(url));
         const hooks = 'let port; export function initialize(data) { port = data.port }' +
           ' export async function resolve(specifier, context, next) {' +
           ' const result = await next(specifier, context); port.postMessage(result.url); return result }';
         register('data:text/javascript,' + encodeURIComponent(hooks), { data: { port: port2 }, transferList: [port2] });
         const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
         await import('nestjs-redis-rate-limiter');
         await settle();
         const library = optional(seen);
         await import('@nestjs/websockets');
         await settle();
         console.log(JSON.stringify({ library, control: optional(seen) }));
         port1.close();`;
  const { stdout } = await run(process.execPath, [
    `--input-type=${how === 'import' ? 'module' : 'commonjs'}`,
    '-e',
    script,
  ]);
  return JSON.parse(stdout) as { library: string[]; control: string[] };
}

describe('optional peers', () => {
  it.each(['import', 'require'] as const)(
    'loading the package with %s loads none of graphql, @nestjs/websockets, @nestjs/microservices, @nestjs/throttler, @nestjs/swagger, @nestjs/terminus, @opentelemetry/api, ioredis, iovalkey, redis, @valkey/valkey-glide',
    async (how) => {
      const { library, control } = await loadedPackages(how);
      expect(library).toEqual([]);
      expect(control).toContain('@nestjs/websockets');
    },
  );

  it('an app without @nestjs/swagger installed starts and limits, warning of nothing', async () => {
    // A resolve hook hides the package as an app that never installed it would lack it.
    const hide =
      'export async function resolve(specifier, context, next) {' +
      " if (specifier === '@nestjs/swagger') { const error = new Error(\"Cannot find package '@nestjs/swagger'\");" +
      " error.code = 'ERR_MODULE_NOT_FOUND'; throw error }" +
      ' return next(specifier, context) }';
    const script = `
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hide)}));
      const { Controller, Get, Module } = await import('@nestjs/common');
      const { NestFactory } = await import('@nestjs/core');
      const { RateLimit, RateLimitModule } = await import('nestjs-redis-rate-limiter');
      class Items { list() { return []; } }
      Get()(Items.prototype, 'list', Object.getOwnPropertyDescriptor(Items.prototype, 'list'));
      RateLimit({ limit: 1, window: '1m' })(Items.prototype, 'list', Object.getOwnPropertyDescriptor(Items.prototype, 'list'));
      Controller('items')(Items);
      class AppModule {}
      Module({ imports: [RateLimitModule.forRoot({})], controllers: [Items] })(AppModule);
      const app = await NestFactory.create(AppModule, { logger: ['warn', 'error'] });
      await app.listen(0, '127.0.0.1');
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1') + '/items';
      const statuses = [(await fetch(url)).status, (await fetch(url)).status];
      let swagger = 'hidden';
      await import('@nestjs/swagger').then(() => (swagger = 'loaded'), () => undefined);
      await app.close();
      console.log(JSON.stringify({ statuses, swagger }));`;
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, NO_COLOR: '1' },
    });
    const lines = (stdout + stderr).split('\n').filter((line) => line.trim() !== '');
    expect(JSON.parse(lines.at(-1)!)).toEqual({ statuses: [200, 429], swagger: 'hidden' });
    expect(lines.slice(0, -1).filter((line) => /swagger/i.test(line))).toEqual([]);
  });
});
