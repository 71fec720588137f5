import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { binariesOf, type ServerKind } from './server-kinds.js';

export const { server: REDIS_SERVER_BIN, cli: REDIS_CLI_BIN } = binariesOf('redis');
const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 5_000;
const MAX_OUTPUT_CHARS = 16_384;
const MAX_PORT_ATTEMPTS = 5;

export interface RedisServer {
  /** Which server runs: redis-server or valkey-server. */
  readonly kind: ServerKind;
  readonly port: number;
  /** redis://127.0.0.1:<port> */
  readonly url: string;
  /** Private working directory (e.g. the cluster's nodes.conf); kept across restarts. */
  readonly dir: string;
  /** SIGTERM, then wait for exit. No-op if not running. */
  stop(): Promise<void>;
  /** SIGKILL, then wait for exit (simulates a crash). No-op if not running. */
  kill(): Promise<void>;
  /** Start again on the same port and dir (stops first if still running); resolves once it answers. */
  restart(): Promise<void>;
  /**
   * Freeze the process (SIGSTOP) for `ms`, then SIGCONT. Sockets stay open, so clients see a
   * server that accepts bytes but never answers. Resolves right after SIGSTOP is sent.
   */
  pause(ms: number): Promise<void>;
}

export interface StartRedisServerOptions {
  /** redis-server (the default) or valkey-server (server-kinds.ts). */
  server?: ServerKind;
  extraArgs?: string[];
  /**
   * Port to use, or a function that picks one. With a function (default: `freePort`), a port
   * lost to another process between picking and binding is re-picked; a fixed port is not.
   */
  port?: number | (() => Promise<number>);
  /**
   * Text of a config file, written to `<dir>/redis.conf` and passed before the arguments
   * (Sentinel needs a config file it can rewrite).
   */
  config?: string;
  /** The default user's password (`--requirepass`); the harness's own probes authenticate with it. */
  password?: string;
}

/**
 * Jest hands test files a copy of `process` whose 'exit' event never fires, so
 * `process.on('exit')` cannot reap servers there. Instead every server gets a tiny `sh` watchdog
 * that blocks reading a pipe from this process; the pipe hits EOF however this process dies
 * (exit, crash, SIGKILL), and the watchdog then SIGKILLs the server whose pid is in
 * PID_FILE and removes the server's directory.
 */
const PID_FILE = '.harness-redis.pid';
const WATCHDOG_SCRIPT = `read _ignored; [ -f "$1/${PID_FILE}" ] && kill -9 "$(cat "$1/${PID_FILE}")"; rm -rf "$1"`;

function startWatchdog(dir: string): ChildProcess {
  const watchdog = spawn('/bin/sh', ['-c', WATCHDOG_SCRIPT, 'redis-watchdog', dir], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  // Neither the watchdog nor its pipe may keep Jest alive; the pipe only has to stay open.
  watchdog.unref();
  (watchdog.stdin as Socket | null)?.unref();
  return watchdog;
}

/**
 * Parses one reply at the start of `buffer`: its payload (an Error for an error reply) and
 * its length, or null while incomplete. Understands only what the launchers need: simple
 * strings, errors, integers and bulk strings.
 */
function parseRawReply(buffer: Buffer): { value: string | Error; length: number } | null {
  const lineEnd = buffer.indexOf('\r\n');
  if (lineEnd < 0) return null;
  const type = String.fromCharCode(buffer[0]);
  const line = buffer.subarray(1, lineEnd).toString();
  if (type === '+' || type === ':') return { value: line, length: lineEnd + 2 };
  if (type === '-') return { value: new Error(line), length: lineEnd + 2 };
  if (type !== '$')
    return {
      value: new Error(`unsupported reply type ${JSON.stringify(type)}`),
      length: buffer.length,
    };
  const size = Number(line);
  if (size < 0) return { value: '', length: lineEnd + 2 };
  const start = lineEnd + 2;
  if (buffer.length < start + size + 2) return null;
  return { value: buffer.subarray(start, start + size).toString(), length: start + size + 2 };
}

/** Redis TIME in whole ms, as the scripts read it. */
export async function redisNowMs(client: Redis): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/**
 * A window of at least twice `room` whose current instance has `room` ms left on Redis' clock:
 * fixed windows and window counters are epoch-aligned, so with a fixed length the window could
 * end mid-test (a window key expiring before it is looked at, or a count starting over before
 * a denial). Lengths differ in where now falls in their window; the first with room is taken.
 */
export async function windowWithRoom(client: Redis, room: number): Promise<number> {
  const now = await redisNowMs(client);
  let window = 2 * room;
  while (window - (now % window) < room) window++;
  return window;
}

/**
 * Ample for a test's few requests even on the loaded machine, and short enough that waiting
 * for it costs a minute-window test a fifth of a second on average.
 */
const WINDOW_ROOM_MS = 5_000;

/**
 * Waits, if need be, until the epoch-aligned window of `windowMs` that Redis' clock is in
 * has `roomMs` (under `windowMs`) left. Fixed windows start their count over when one ends,
 * so a sequence of requests that expects a denial is started here, not whenever the wall
 * clock happens to be. For windows of a length asserted on (headers' w=60, a minute's
 * counts); where any length will do, `windowWithRoom` picks one without waiting. Given a
 * server rather than a client, it reads the clock over a connection of its own.
 */
export async function untilWindowHasRoom(
  redis: Redis | RedisServer,
  windowMs: number,
  roomMs = WINDOW_ROOM_MS,
): Promise<void> {
  const client = redis instanceof Redis ? redis : new Redis(redis.url);
  try {
    for (;;) {
      const left = windowMs - ((await redisNowMs(client)) % windowMs);
      if (left >= roomMs) return;
      await sleep(left);
    }
  } finally {
    if (client !== redis) client.disconnect();
  }
}

/**
 * Sends one command over a fresh TCP connection (after AUTH, given a password) and returns
 * the reply's payload. Kept dependency-free so the harness does not rely on the client under
 * test.
 */
export function sendRawCommand(
  port: number,
  args: string[],
  timeoutMs = 1_000,
  password?: string,
): Promise<string> {
  const commands = password === undefined ? [args] : [['AUTH', password], args];
  return new Promise((resolve, reject) => {
    const socket = connect({ host: HOST, port });
    let buffer = Buffer.alloc(0);
    let pendingReplies = commands.length;
    const finish = (error: Error | null, value = ''): void => {
      socket.destroy();
      if (error) reject(error);
      else resolve(value);
    };
    socket.setTimeout(timeoutMs, () => finish(new Error(`no reply within ${timeoutMs} ms`)));
    socket.once('error', (error) => finish(error));
    socket.once('close', () => finish(new Error('connection closed before a full reply')));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (let reply = parseRawReply(buffer); reply; reply = parseRawReply(buffer)) {
        buffer = buffer.subarray(reply.length);
        if (reply.value instanceof Error) return finish(reply.value);
        if (--pendingReplies === 0) return finish(null, reply.value);
      }
    });
    socket.write(
      commands
        .map(
          (command) =>
            `*${command.length}\r\n` +
            command.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join(''),
        )
        .join(''),
    );
  });
}

/** The process_id of whatever Redis answers on `port`, or null if none does (yet). */
async function answeringPid(port: number, password?: string): Promise<number | null> {
  try {
    const info = await sendRawCommand(port, ['INFO', 'server'], 250, password);
    const match = /^process_id:(\d+)/m.exec(info);
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

class ServerStartError extends Error {
  constructor(
    message: string,
    readonly addressInUse: boolean,
  ) {
    super(message);
  }
}

class RedisServerProcess implements RedisServer {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private output = '';
  private resumeTimer: NodeJS.Timeout | null = null;
  private readonly watchdog: ChildProcess;
  /** The binary's path, and its name for messages ('valkey-server on port ...'). */
  private readonly binary: string;
  private readonly name: string;

  constructor(
    readonly kind: ServerKind,
    readonly port: number,
    readonly dir: string,
    private readonly extraArgs: readonly string[],
    private readonly configFile: string | undefined,
    private readonly password: string | undefined,
  ) {
    this.watchdog = startWatchdog(dir);
    this.binary = binariesOf(kind).server;
    this.name = basename(this.binary);
  }

  get url(): string {
    return `redis://${HOST}:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error(`${this.name} on port ${this.port} is already running`);
    this.output = '';
    const args = [
      ...(this.configFile === undefined ? [] : [this.configFile]),
      '--port',
      String(this.port),
      '--bind',
      HOST,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--dir',
      this.dir,
      '--logfile',
      '',
      ...(this.password === undefined ? [] : ['--requirepass', this.password]),
      ...this.extraArgs,
    ];
    const child = spawn(this.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const pidFile = join(this.dir, PID_FILE);
    if (child.pid !== undefined) writeFileSync(pidFile, String(child.pid));
    // A server a test forgot to stop must not keep Jest alive; the watchdog reaps it.
    child.unref();
    (child.stdout as Socket | null)?.unref();
    (child.stderr as Socket | null)?.unref();
    const append = (chunk: Buffer): void => {
      this.output = (this.output + chunk.toString()).slice(-MAX_OUTPUT_CHARS);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    let exitInfo: string | null = null;
    this.exited = new Promise((resolve) => {
      const onGone = (code: number | null, signal: NodeJS.Signals | null): void => {
        exitInfo = signal ? `signal ${signal}` : `code ${code}`;
        rmSync(pidFile, { force: true });
        if (this.child === child) this.child = null;
        this.clearResumeTimer();
        resolve();
      };
      child.once('exit', onGone);
      child.once('error', (error) => {
        append(Buffer.from(String(error)));
        onGone(null, null);
      });
    });

    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exitInfo !== null) {
        // Let the pipes drain so the error shows the server's last words.
        await sleep(20);
        throw new ServerStartError(
          `${this.name} on port ${this.port} exited during startup (${exitInfo}):\n${this.output}`,
          /address already in use/i.test(this.output),
        );
      }
      // PING alone could be answered by another server that already owns the port.
      if ((await answeringPid(this.port, this.password)) === child.pid) return;
      if (Date.now() > deadline) {
        await this.kill();
        throw new ServerStartError(
          `${this.name} on port ${this.port} did not answer within ${READY_TIMEOUT_MS} ms:\n${this.output}`,
          false,
        );
      }
      await sleep(10);
    }
  }

  async stop(): Promise<void> {
    await this.signalAndWait('SIGTERM');
  }

  async kill(): Promise<void> {
    await this.signalAndWait('SIGKILL');
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async pause(ms: number): Promise<void> {
    const child = this.child;
    if (!child) throw new Error(`${this.name} on port ${this.port} is not running`);
    this.clearResumeTimer();
    child.kill('SIGSTOP');
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = null;
      child.kill('SIGCONT');
    }, ms);
    // A forgotten pause must not keep Jest alive; the exit hook SIGKILLs a stopped process fine.
    this.resumeTimer.unref();
  }

  /** Kills the server and its watchdog and removes its directory; the handle is unusable after. */
  async dispose(): Promise<void> {
    await this.kill();
    this.watchdog.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  private clearResumeTimer(): void {
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.resumeTimer = null;
  }

  private async signalAndWait(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.clearResumeTimer();
    child.kill(signal);
    // A SIGSTOPped process keeps SIGTERM pending until it is continued.
    child.kill('SIGCONT');
    const escalate = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    try {
      await this.exited;
    } finally {
      clearTimeout(escalate);
    }
  }
}

/**
 * Starts a throwaway redis-server (or valkey-server, with `server: 'valkey'`) on 127.0.0.1
 * with no persistence; resolves once it answers.
 */
export async function startRedisServer(
  options: StartRedisServerOptions = {},
): Promise<RedisServer> {
  const pickPort = options.port ?? freePort;
  const extraArgs = options.extraArgs ?? [];
  const kind = options.server ?? 'redis';
  for (let attempt = 1; ; attempt++) {
    const port = typeof pickPort === 'number' ? pickPort : await pickPort();
    const dir = mkdtempSync(join(tmpdir(), `${kind}-${port}-`));
    let configFile: string | undefined;
    if (options.config !== undefined) {
      configFile = join(dir, 'redis.conf');
      writeFileSync(configFile, options.config);
    }
    const server = new RedisServerProcess(kind, port, dir, extraArgs, configFile, options.password);
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.dispose();
      const retry =
        error instanceof ServerStartError &&
        error.addressInUse &&
        typeof pickPort !== 'number' &&
        attempt < MAX_PORT_ATTEMPTS;
      if (!retry) throw error;
    }
  }
}
