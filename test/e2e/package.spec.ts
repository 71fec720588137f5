import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The package as users get it: the compiled entry (built by `npm test`'s pretest) and the tarball. */
describe('published package', () => {
  it('resolves by its own name (self-reference) to the compiled entry with the contract exports', async () => {
    const script = `import('nestjs-redis-rate-limiter').then((m) => console.log(JSON.stringify(Object.keys(m).sort())))`;
    const { stdout } = await run(process.execPath, ['-e', script]);
    expect(JSON.parse(stdout)).toEqual(
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

  it('packs dist/lib and lua/, and nothing of test/ or sample/', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts']);
    const files: string[] = JSON.parse(stdout)[0].files.map((file: { path: string }) => file.path);
    expect(files).toEqual(
      expect.arrayContaining(['dist/lib/index.js', 'dist/lib/index.d.ts', 'lua/decide.lua']),
    );
    expect(
      files.filter((file) => /^(test|sample|bench|dist\/(test|sample|bench))\//.test(file)),
    ).toEqual([]);
  });
});
