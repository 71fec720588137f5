/**
 * The hot-path bench's app (hot-path-app.ts, built) in a process of its own: as
 * bench/hot-path.ts measures it and test/e2e/hot-path-app.spec.ts checks it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface HotPathAppProcess {
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  /**
   * CPU µs the app has used (Linux /proc, in 1/100 s ticks): unlike requests/s, what each
   * request costs the app hardly moves with the machine's other load.
   */
  cpuUs(): number;
  /** Kills the app and waits for it to exit. */
  stop(): Promise<void>;
}

/** How to start the app beyond its variant: Node flags and environment added. */
export interface HotPathAppOptions {
  readonly nodeFlags?: readonly string[];
  readonly env?: Readonly<Record<string, string>>;
}

/** Starts the built app at `script` in `variant` on `adapter`, once it is listening. */
export async function startHotPathApp(
  script: URL,
  adapter: string,
  variant: string,
  redisUrl: string,
  { nodeFlags = [], env = {} }: HotPathAppOptions = {},
): Promise<HotPathAppProcess> {
  const child = spawn(process.execPath, ['--expose-gc', ...nodeFlags, fileURLToPath(script)], {
    env: {
      ...process.env,
      ...env,
      HOT_PATH_ADAPTER: adapter,
      HOT_PATH_VARIANT: variant,
      REDIS_URL: redisUrl,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const listening = /listening (\d+)/.exec(output);
      if (listening) resolve(Number(listening[1]));
    });
    void exited.then(([code]) =>
      reject(new Error(`hot-path app (${adapter}, ${variant}) exited (${code}): ${output}`)),
    );
  });
  return {
    port,
    pid: child.pid!,
    url: `http://127.0.0.1:${port}`,
    cpuUs: () => {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10_000;
    },
    stop: async () => {
      child.kill();
      await exited.catch(() => undefined);
    },
  };
}
