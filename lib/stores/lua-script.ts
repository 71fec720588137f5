import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Order matters: the shared helpers first, the entry point that uses them last. */
const SCRIPT_FILES = [
  'common.lua',
  'token-bucket.lua',
  'leaky-bucket.lua',
  'fixed-window.lua',
  'sliding-window-log.lua',
  'sliding-window-counter.lua',
  'decide.lua',
];

/** The package's `lua/` folder, whether running from `lib/` sources or compiled `dist/lib/`. */
function luaFolder(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(folder, 'lua');
    if (existsSync(join(candidate, 'decide.lua'))) return candidate;
    const parent = dirname(folder);
    if (parent === folder) throw new Error('nestjs-redis-rate-limiter: lua/ folder not found');
    folder = parent;
  }
}

/** The one script every decision runs: the readable per-algorithm files joined in order. */
export function loadDecideScript(): string {
  const folder = luaFolder();
  return SCRIPT_FILES.map((file) => readFileSync(join(folder, file), 'utf8')).join('\n');
}
