import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { compiledPodFile } from './pod-fleet.js';

/** One change seen by the watch: from `at` (epoch ms), Redis accepts commands, or not. */
export interface AcceptanceChange {
  readonly accepting: boolean;
  readonly at: number;
}

export interface AcceptanceWatch {
  /** Every change so far, in order. */
  readonly changes: readonly AcceptanceChange[];
  stop(): void;
}

/**
 * Watches, from a child process of its own (redis-acceptance-watch.ts), when the Redis on
 * `port` accepts commands: an independent client, unaffected by this process's load. It
 * writes `key` (on a Cluster node, one of the node's slots). Resolves once Redis has first
 * accepted one.
 */
export async function watchAcceptance(port: number, key?: string): Promise<AcceptanceWatch> {
  const script = compiledPodFile('redis-acceptance-watch.js');
  const child = spawn(process.execPath, [script, String(port), ...(key ? [key] : [])], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const changes: AcceptanceChange[] = [];
  await new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      const change = JSON.parse(line) as AcceptanceChange;
      changes.push(change);
      if (change.accepting) resolve();
    });
  });
  return { changes, stop: () => child.stdin.end() };
}
