/**
 * A child process that tells when a Redis accepts commands: one at a time, every
 * POLL_EVERY_MS, on a connection of its own (reconnected at once when lost, with no
 * password), a script that writes a key, so that refused writes (OOM), refused scripts
 * (NOPERM), a refused connection (NOAUTH), a paused or stopped server and a dead one all
 * count as not accepting. Prints one JSON line per change, `{"accepting":true,"at":<epoch
 * ms>}`: for `true` when the first good reply arrived, for `false` when the first failure
 * did, or when a command had gone POLL_EVERY_MS * 10 without a reply. Its own process, so
 * that neither a test's load nor its event loop delays the readings. Exits when its stdin
 * closes. Started by watchAcceptance (acceptance-watch.ts) with the port as argument, and
 * the key to write (one of the watched node's slots, on a Cluster) if not KEY.
 */
import { connect, type Socket } from 'node:net';

const POLL_EVERY_MS = 2;
const SILENT_AFTER_MS = POLL_EVERY_MS * 10;
const KEY = process.argv[3] ?? 'acceptance-watch';
const SCRIPT = "return redis.call('SET', KEYS[1], '1')";
const COMMAND = ['EVAL', SCRIPT, '1', KEY]
  .reduce((resp, arg) => `${resp}$${Buffer.byteLength(arg)}\r\n${arg}\r\n`, '*4\r\n')
  .toString();

const port = Number(process.argv[2]);
let accepting: boolean | undefined;
let socket: Socket | undefined;
let pending = '';
let silentTimer: NodeJS.Timeout | undefined;

function report(value: boolean, at: number): void {
  if (value === accepting) return;
  accepting = value;
  process.stdout.write(`${JSON.stringify({ accepting: value, at })}\n`);
}

function send(): void {
  if (!socket) return;
  const sentAt = Date.now();
  silentTimer = setTimeout(() => report(false, sentAt), SILENT_AFTER_MS);
  socket.write(COMMAND);
}

function open(): void {
  const current = connect({ port, host: '127.0.0.1' }, () => {
    current.setNoDelay(true);
    send();
  });
  socket = current;
  pending = '';
  current.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    for (let end = pending.indexOf('\r\n'); end >= 0; end = pending.indexOf('\r\n')) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      clearTimeout(silentTimer);
      report(line === '+OK', Date.now());
      setTimeout(send, POLL_EVERY_MS);
    }
  });
  current.once('error', () => undefined);
  current.once('close', () => {
    clearTimeout(silentTimer);
    report(false, Date.now());
    if (socket === current) setTimeout(open, POLL_EVERY_MS);
  });
}

process.stdin.once('end', () => process.exit(0));
process.stdin.resume();
open();
