// Writes lib/stores/redis/lua-sources.generated.ts from lua/*.lua, so the scripts travel inside the
// JavaScript build (bundlers, single-file deployments) while lua/ stays the readable source.
// Run by `npm run build` and `npm run lint`; the output is not committed.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { URL } from 'node:url';

const root = new URL('../', import.meta.url);
const sources = Object.fromEntries(
  readdirSync(new URL('lua/', root))
    .filter((file) => file.endsWith('.lua'))
    .sort()
    .map((file) => [
      file.slice(0, -'.lua'.length),
      readFileSync(new URL(`lua/${file}`, root), 'utf8'),
    ]),
);
const body = Object.entries(sources)
  .map(([name, text]) => `  ${JSON.stringify(name)}: ${JSON.stringify(text)},`)
  .join('\n');
writeFileSync(
  new URL('lib/stores/redis/lua-sources.generated.ts', root),
  `// Generated from lua/*.lua by scripts/embed-lua.mjs at build time: edit lua/, not this file.\n` +
    `export const LUA_SOURCES: Readonly<Record<string, string>> = {\n${body}\n};\n`,
);
