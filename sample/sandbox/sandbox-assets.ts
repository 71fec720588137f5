import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file the page loads, as it is served. */
export interface SandboxFile {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The page and the files it loads (its ES modules, stylesheet and icon), read once at start. */
export interface SandboxAssets {
  /** The page with its `<base href>` pointing at `basePath`, so relative URLs work under any prefix. */
  page(basePath: string): string;
  /** A script, stylesheet or icon of the page by file name; undefined for any other name. */
  file(name: string): SandboxFile | undefined;
}

const PUBLIC_FOLDER = join('sample', 'sandbox', 'public');
/** The `<base>` tag as written in index.html; `page()` swaps in the path the page was served at. */
const BASE_TAG = '<base href="/sandbox/" />';
/** Only these kinds of file are served, so nothing else in the folder (tsconfig.json) leaks out. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export function loadSandboxAssets(): SandboxAssets {
  const folder = findPublicFolder();
  const html = readFileSync(join(folder, 'index.html'), 'utf8');
  if (!html.includes(BASE_TAG)) throw new Error(`${folder}/index.html lacks ${BASE_TAG}`);
  const files = new Map<string, SandboxFile>();
  for (const name of readdirSync(folder)) {
    const contentType = CONTENT_TYPES[extname(name)];
    if (contentType) files.set(name, { body: readFileSync(join(folder, name)), contentType });
  }
  return {
    page: (basePath) => html.replace(BASE_TAG, `<base href="${escapeAttribute(basePath)}" />`),
    file: (name) => files.get(name),
  };
}

/**
 * From source (ts-jest, tsx) `public/` sits next to this file; `npm start` runs the compiled copy
 * in `dist/sample/sandbox/`, and tsc copies no HTML, so then the source folder is found by
 * walking up to the project root.
 */
function findPublicFolder(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const besideThisFile = join(here, 'public');
  if (existsSync(join(besideThisFile, 'index.html'))) return besideThisFile;
  for (let dir = here; dirname(dir) !== dir; dir = dirname(dir)) {
    const candidate = join(dir, PUBLIC_FOLDER);
    if (existsSync(join(candidate, 'index.html'))) return candidate;
  }
  throw new Error(`Sandbox page not found: no ${PUBLIC_FOLDER}/index.html above ${here}`);
}

function escapeAttribute(text: string): string {
  return text.replace(/[&"<>']/g, (char) => `&#${char.charCodeAt(0)};`);
}
