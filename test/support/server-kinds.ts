import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from './package-root.js';

/**
 * The servers the harness starts: `redis` is Debian's redis-server (7.0), `valkey` Valkey
 * 8.0.1 from ../shared/valkey-8.0.1/bin beside the project (no Debian 12 package ships it;
 * see that folder's README), or from the folder VALKEY_BIN_DIR names.
 */
export const SERVER_KINDS = ['redis', 'valkey'] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];

/** Overrides where valkey-server and valkey-cli are looked for. */
export const VALKEY_BIN_DIR_ENV = 'VALKEY_BIN_DIR';

export interface ServerBinaries {
  /** The server, started with redis-server's arguments (Valkey takes the same). */
  readonly server: string;
  /** Its CLI, for `--cluster create`. */
  readonly cli: string;
}

function valkeyBinDir(): string {
  const dir = process.env[VALKEY_BIN_DIR_ENV];
  return dir ? resolve(dir) : join(packageRoot(), '..', 'shared', 'valkey-8.0.1', 'bin');
}

export function binariesOf(kind: ServerKind): ServerBinaries {
  if (kind === 'redis') return { server: '/usr/bin/redis-server', cli: '/usr/bin/redis-cli' };
  const dir = valkeyBinDir();
  return { server: join(dir, 'valkey-server'), cli: join(dir, 'valkey-cli') };
}

/** Why suites on `kind` cannot run here (its binaries are missing), or undefined if they can. */
export function missingServer(kind: ServerKind): string | undefined {
  const binaries = binariesOf(kind);
  const missing = [binaries.server, binaries.cli].filter((path) => !existsSync(path));
  return missing.length === 0 ? undefined : `${missing.join(' and ')} not found`;
}
