import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { RateLimitGuard } from 'nestjs-redis-rate-limiter';
import { LIMIT } from '../src/app.controller.js';
import { AppModule } from '../src/app.module.js';

/** Jest in CommonJS mode loads the package through its own require (the `require` build). */
describe('AppModule under Jest (CommonJS)', () => {
  let app: INestApplication | undefined;
  afterEach(() => app?.close());

  async function statuses(overrideGuard: boolean): Promise<number[]> {
    const builder = Test.createTestingModule({ imports: [AppModule] });
    if (overrideGuard)
      builder.overrideProvider(RateLimitGuard).useValue({ canActivate: () => true });
    app = (await builder.compile()).createNestApplication({ logger: ['error', 'warn'] });
    await app.listen(0, '127.0.0.1');
    const url = `${await app.getUrl()}/limited`;
    const result: number[] = [];
    for (let i = 0; i <= LIMIT + 1; i++) result.push((await fetch(url)).status);
    return result;
  }

  it('limits /limited to its limit', async () => {
    expect(await statuses(false)).toEqual([...Array(LIMIT).fill(200), 429, 429]);
  });

  it('admits everything once RateLimitGuard is overridden', async () => {
    expect(await statuses(true)).toEqual(Array(LIMIT + 2).fill(200));
  });
});
