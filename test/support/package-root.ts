import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's root folder (where package.json is), found from this file whether it runs as
 * TypeScript under Jest (test/support) or compiled (dist/test/support).
 */
export function packageRoot(): string {
  let folder = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(folder, 'package.json'))) {
    const parent = dirname(folder);
    if (parent === folder) throw new Error('package root not found');
    folder = parent;
  }
  return folder;
}
