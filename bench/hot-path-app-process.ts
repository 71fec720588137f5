/**
 * The hot-path bench's app (hot-path-app.ts, built) in a process of its own: as
 * bench/hot-path.ts measures it and test/e2e/hot-path-app.spec.ts checks it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

export interface HotPathAppProcess {
  readonly port: number;
  readonly pid: number;
  readonly url: string;
  /** Kills the app and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts the built app at `script` in `variant` on `adapter`, once it is listening. */
export async function startHotPathApp(
  script: URL,
  adapter: string,
  variant: string,
  redisUrl: string,
): Promise<HotPathAppProcess> {
  const child = spawn(process.execPath, ['--expose-gc', fileURLToPath(script)], {
    env: {
      ...process.env,
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
    stop: async () => {
      child.kill();
      await exited.catch(() => undefined);
    },
  };
}
