import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

const REPO = fileURLToPath(new URL('../..', import.meta.url));
/**
 * Fixture apps run outside the repository, so that nothing they load can resolve from the
 * repository's own node_modules; one folder per checkout, kept between runs for its installs.
 */
const WORK_ROOT = join(
  tmpdir(),
  `nestjs-redis-rate-limiter-compat-${createHash('sha256').update(REPO).digest('hex').slice(0, 12)}`,
);
const BOOT_TIMEOUT_MS = 20_000;
/** The app itself, the same in every fixture; each fixture adds its src/http-adapter.ts. */
const SHARED_APP = join(REPO, 'test', 'compat', 'app');
/** Marks a fixture's node_modules as installed from exactly this lockfile. */
const INSTALL_STAMP = '.compat-installed-from';

/** Runs a command; on failure the error carries its output, so a failing check says why. */
export async function run(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = childEnv(),
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await execFileAsync(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}\n${stderr}`, {
      cause: error,
    });
  }
}

/** The environment for a fixture's processes: none of this Jest's own variables. */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('JEST_')),
  );
  return { ...env, ...extra };
}

/** The library as npm would publish it: `npm pack` of the current build. */
export async function packLibrary(): Promise<string> {
  const destination = join(REPO, '.tmp', 'compat');
  mkdirSync(destination, { recursive: true });
  const { stdout } = await run(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--pack-destination', destination],
    REPO,
  );
  return join(destination, (JSON.parse(stdout) as { filename: string }[])[0].filename);
}

export interface PrepareFixtureOptions {
  /**
   * Whether the shared app (test/compat/app) goes into its src/ (the default). False: the
   * fixture's own src/ is the whole app, for one that lacks what the shared app needs (e.g. an
   * app with no Redis client and no GraphQL).
   */
  readonly sharedApp?: boolean;
}

/**
 * Copies test/compat/<name>, with the shared app in its src/ unless told otherwise, to its
 * folder outside the repository and installs it as a user would: `npm ci` from its own
 * lockfile (skipped while node_modules already matches that lockfile), then the library from
 * its tarball, so npm checks the package's peer ranges against the app's Nest and ioredis.
 * Returns the folder.
 */
export async function prepareFixture(
  name: string,
  tarball: string,
  { sharedApp = true }: PrepareFixtureOptions = {},
): Promise<string> {
  const source = join(REPO, 'test', 'compat', name);
  const dir = join(WORK_ROOT, name);
  mkdirSync(dir, { recursive: true });
  for (const entry of readdirSync(dir)) {
    if (entry !== 'node_modules') rmSync(join(dir, entry), { recursive: true, force: true });
  }
  cpSync(source, dir, {
    recursive: true,
    filter: (path) => !['node_modules', 'dist'].includes(basename(path)),
  });
  if (sharedApp) cpSync(SHARED_APP, join(dir, 'src'), { recursive: true });
  const lockfile = createHash('sha256')
    .update(readFileSync(join(dir, 'package.json')))
    .update(readFileSync(join(dir, 'package-lock.json')))
    .digest('hex');
  const stamp = join(dir, 'node_modules', INSTALL_STAMP);
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== lockfile) {
    await run('npm', ['ci', '--no-audit', '--no-fund'], dir);
    writeFileSync(stamp, lockfile);
  }
  await run('npm', ['install', '--no-save', '--no-audit', '--no-fund', tarball], dir);
  return dir;
}

export interface FixtureApp {
  /** Where the app listens, e.g. http://127.0.0.1:41234 */
  readonly url: string;
  /** Everything it has written to stdout and stderr so far, start-up logs included. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts the fixture's build (`node dist/src/main.js`); resolves once it says where it listens. */
export function startFixtureApp(dir: string, env: NodeJS.ProcessEnv): Promise<FixtureApp> {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    cwd: dir,
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    child.kill('SIGKILL');
    await exited;
  };
  let output = '';
  return new Promise((resolve, reject) => {
    const fail = (reason: string) => {
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${reason}:\n${output}`)));
    };
    const timer = setTimeout(
      () => fail(`no "listening on" within ${BOOT_TIMEOUT_MS} ms`),
      BOOT_TIMEOUT_MS,
    );
    const onEarlyExit = (code: number | null, signal: string | null) =>
      fail(`exited during start (${signal ?? code})`);
    child.once('exit', onEarlyExit);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    let started = false;
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk;
      const listening = /listening on (http:\/\/\S+)/.exec(output);
      if (started || !listening) return;
      started = true;
      clearTimeout(timer);
      child.off('exit', onEarlyExit);
      resolve({ url: listening[1], output: () => output, stop });
    });
  });
}
