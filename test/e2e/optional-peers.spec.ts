import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The transports' packages, which the library reaches for only when a handler of theirs is
 * limited, OpenTelemetry's only with the `metrics` option, @nestjs/throttler never (only the
 * nestjs-redis-rate-limiter/throttler entry names it, for its types), and the Redis clients'
 * only for a `redis` option (Valkey GLIDE's never: the app's client is used by its methods,
 * and no GLIDE `Script` is made).
 */
const OPTIONAL =
  /\/node_modules\/(graphql|@nestjs\/(graphql|websockets|microservices|throttler)|@opentelemetry\/[^/]+|ioredis|iovalkey|redis|@redis\/[^/]+|@valkey\/[^/]+)\//;

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
    'loading the package with %s loads none of graphql, @nestjs/websockets, @nestjs/microservices, @nestjs/throttler, @opentelemetry/api, ioredis, iovalkey, redis, @valkey/valkey-glide',
    async (how) => {
      const { library, control } = await loadedPackages(how);
      expect(library).toEqual([]);
      expect(control).toContain('@nestjs/websockets');
    },
  );
});
