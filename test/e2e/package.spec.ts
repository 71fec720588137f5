import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The package as users get it: the compiled entry (built by `npm test`'s pretest) and the tarball. */
describe('published package', () => {
  /** Prints where the package resolves to and its export names, loaded one way. */
  async function load(how: 'import' | 'require') {
    const script =
      how === 'import'
        ? `const m = await import('nestjs-redis-rate-limiter');
           console.log(JSON.stringify({ file: import.meta.resolve('nestjs-redis-rate-limiter'), keys: Object.keys(m) }))`
        : `const m = require('nestjs-redis-rate-limiter');
           console.log(JSON.stringify({ file: require.resolve('nestjs-redis-rate-limiter'), keys: Object.keys(m) }))`;
    const inputType = how === 'import' ? 'module' : 'commonjs';
    const { stdout } = await run(process.execPath, [`--input-type=${inputType}`, '-e', script]);
    const { file, keys } = JSON.parse(stdout) as { file: string; keys: string[] };
    return { file, keys: keys.filter((key) => key !== 'default').sort() };
  }

  it('resolves by its own name (self-reference): import to the ESM build, require() to the CommonJS build, with the same contract exports', async () => {
    const imported = await load('import');
    const required = await load('require');
    expect(imported.file).toMatch(/\/dist\/lib\/index\.js$/);
    expect(required.file).toMatch(/\/dist\/cjs\/index\.js$/);
    expect(required.keys).toEqual(imported.keys);
    expect(imported.keys).toEqual(
      expect.arrayContaining([
        'RATE_LIMIT_OPTIONS',
        'RATE_LIMIT_REDIS',
        'RateLimit',
        'RateLimitExceededException',
        'RateLimitExceptionFilter',
        'RateLimitGuard',
        'RateLimitModule',
        'RateLimitUnavailableException',
        'RateLimiter',
        'SkipRateLimit',
      ]),
    );
  });

  /** Boots an app on the imported package, having also required it if asked; returns its log. */
  async function bootLog(alsoRequire: boolean): Promise<string> {
    const script = `
      import { createRequire } from 'node:module';
      import { Module } from '@nestjs/common';
      import { NestFactory } from '@nestjs/core';
      const { RateLimitModule } = await import('nestjs-redis-rate-limiter');
      if (process.env.ALSO_REQUIRE) createRequire(import.meta.url)('nestjs-redis-rate-limiter');
      class AppModule {}
      Module({ imports: [RateLimitModule.forRoot({})] })(AppModule);
      const app = await NestFactory.create(AppModule, { logger: ['warn'] });
      await app.init();
      await app.close();`;
    const env = { ...process.env, NO_COLOR: '1', ALSO_REQUIRE: alsoRequire ? '1' : '' };
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
      env,
    });
    return stdout + stderr;
  }

  it('warns at start when one process loads it through both import and require() (the dual-package hazard)', async () => {
    const once = await bootLog(false);
    const twice = await bootLog(true);
    // Both booted: the module's start-up warning about the embedded store is there.
    expect(once).toMatch(/embedded in-process store/);
    expect(twice).toMatch(/embedded in-process store/);
    expect(once).not.toMatch(/loaded more than once/);
    expect(twice).toMatch(/nestjs-redis-rate-limiter is loaded more than once in this process/);
  });

  it('packs both builds (dist/cjs marked CommonJS) and lua/, and nothing of test/ or sample/', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']);
    const files: string[] = JSON.parse(stdout)[0].files.map((file: { path: string }) => file.path);
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/lib/index.js',
        'dist/lib/index.d.ts',
        'dist/cjs/index.js',
        'dist/cjs/index.d.ts',
        'dist/cjs/package.json',
        'dist/lib/throttler/index.js',
        'dist/cjs/throttler/index.js',
        'lua/decide.lua',
      ]),
    );
    expect(
      files.filter((file) => /^(test|sample|bench|dist\/(test|sample|bench))\//.test(file)),
    ).toEqual([]);
    // Node and TypeScript read dist/cjs/*.js and *.d.ts as CommonJS by this file alone.
    expect(JSON.parse(readFileSync('dist/cjs/package.json', 'utf8'))).toEqual({ type: 'commonjs' });
  });
});
