/**
 * The throttler harness's built scripts (test/support/throttler/*.ts) in processes of their
 * own: @nestjs/throttler is CommonJS and requires the ESM @nestjs/common, which Node loads
 * (require(esm)) and Jest's module loader does not.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The build of test/support/throttler/<name>.ts. */
export function compiledThrottlerFile(name: string): string {
  const path = fileURLToPath(
    new URL(`../../../dist/test/support/throttler/${name}.js`, import.meta.url),
  );
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` first`);
  return path;
}

/** Runs a built script to its end; resolves with the JSON of its last stdout line. */
export async function runThrottlerScript<T>(
  name: string,
  env: Readonly<Record<string, string>>,
): Promise<T> {
  const child = spawn(process.execPath, [compiledThrottlerFile(name)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const [code] = await once(child, 'exit');
  const lines = stdout.trim().split('\n');
  if (code !== 0) throw new Error(`${name} exited with ${code}:\n${stdout}\n${stderr}`);
  return JSON.parse(lines[lines.length - 1]) as T;
}

export interface ThrottlerApp {
  /** Where it listens, e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** GET as client `client` (its `x-client` header). */
  get(path: string, client: string): Promise<Response>;
  /** What it has written, start-up line, warnings and errors included. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts the built throttler-app.ts on `redisUrl`; resolves once it listens. */
export async function startThrottlerApp(
  redisUrl: string,
  failureMode: 'open' | 'closed' = 'open',
): Promise<ThrottlerApp> {
  const child = spawn(process.execPath, [compiledThrottlerFile('throttler-app')], {
    env: { ...process.env, REDIS_URL: redisUrl, FAILURE_MODE: failureMode },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const listening = /listening on (http:\/\/\S+)/.exec(stdout);
      if (listening) resolve(listening[1]);
    });
    void exited.then(([code]) => reject(new Error(`throttler app exited (${code}):\n${stderr}`)));
  });
  return {
    url,
    get: (path, client) => fetch(url + path, { headers: { 'x-client': client } }),
    output: () => stdout + stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
