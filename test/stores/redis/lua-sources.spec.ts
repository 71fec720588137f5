import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LUA_SOURCES } from '../../../lib/stores/redis/lua-sources.generated.js';

/**
 * The scripts reach Redis from the generated module, never from disk: it must hold lua/
 * exactly, file for file, or the build that made it is stale.
 */
describe('generated Lua module', () => {
  const folder = join(process.cwd(), 'lua');

  it('embeds every lua/ file verbatim and nothing else', () => {
    const onDisk = Object.fromEntries(
      readdirSync(folder)
        .filter((file) => file.endsWith('.lua'))
        .map((file) => [file.replace(/\.lua$/, ''), readFileSync(join(folder, file), 'utf8')]),
    );
    expect(Object.keys(onDisk).length).toBeGreaterThan(0);
    expect({ ...LUA_SOURCES }).toEqual(onDisk);
  });

  it('leaves lib/ free of runtime reads of lua/ and of import.meta', () => {
    const offenders: string[] = [];
    const visit = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) visit(path);
        else if (/\.ts$/.test(entry.name) && !entry.name.endsWith('.generated.ts')) {
          const text = readFileSync(path, 'utf8');
          if (/import\.meta|readFileSync|\.lua['"`]/.test(text)) offenders.push(path);
        }
      }
    };
    visit(join(process.cwd(), 'lib'));
    expect(offenders).toEqual([]);
  });
});
