import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The page, its script and its stylesheet, read once when the app starts. */
export interface SandboxAssets {
  /** The page with its `<base href>` pointing at `basePath`, so relative URLs work under any prefix. */
  page(basePath: string): string;
  readonly script: string;
  readonly stylesheet: string;
}

const PUBLIC_FOLDER = join('sample', 'sandbox', 'public');
/** The `<base>` tag as written in index.html; `page()` swaps in the path the page was served at. */
const BASE_TAG = '<base href="/sandbox/" />';

export function loadSandboxAssets(): SandboxAssets {
  const folder = findPublicFolder();
  const read = (file: string): string => readFileSync(join(folder, file), 'utf8');
  const html = read('index.html');
  if (!html.includes(BASE_TAG)) throw new Error(`${folder}/index.html lacks ${BASE_TAG}`);
  return {
    page: (basePath) => html.replace(BASE_TAG, `<base href="${escapeAttribute(basePath)}" />`),
    script: read('sandbox.js'),
    stylesheet: read('sandbox.css'),
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
