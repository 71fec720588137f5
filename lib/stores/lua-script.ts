import { LUA_SOURCES } from './lua-sources.generated.js';

/** Order matters: the shared helpers first, the entry point that uses them last. */
const SCRIPT_FILES = [
  'common',
  'token-bucket',
  'leaky-bucket',
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'decide',
];

/** The one script every decision runs: the readable per-algorithm files joined in order. */
export function loadDecideScript(): string {
  return SCRIPT_FILES.map((file) => LUA_SOURCES[file]).join('\n');
}
