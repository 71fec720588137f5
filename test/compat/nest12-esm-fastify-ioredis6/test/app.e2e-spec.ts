import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { RateLimitGuard } from 'nestjs-redis-rate-limiter';
import { LIMIT } from '../src/app.controller.js';
import { AppModule } from '../src/app.module.js';
import { httpAdapter } from '../src/http-adapter.js';

describe('AppModule under node:test (ESM)', () => {
  let app: NestFastifyApplication | undefined;
  afterEach(() => app?.close());

  async function statuses(overrideGuard: boolean): Promise<number[]> {
    const builder = Test.createTestingModule({ imports: [AppModule] });
    if (overrideGuard)
      builder.overrideProvider(RateLimitGuard).useValue({ canActivate: () => true });
    app = (await builder.compile()).createNestApplication<NestFastifyApplication>(httpAdapter(), {
      logger: ['error', 'warn'],
    });
    await app.listen(0, '127.0.0.1');
    const url = `${await app.getUrl()}/limited`;
    const result: number[] = [];
    for (let i = 0; i <= LIMIT + 1; i++) result.push((await fetch(url)).status);
    return result;
  }

  it('limits /limited to its limit', async () => {
    assert.deepEqual(await statuses(false), [...Array(LIMIT).fill(200), 429, 429]);
  });

  it('admits everything once RateLimitGuard is overridden', async () => {
    assert.deepEqual(await statuses(true), Array(LIMIT + 2).fill(200));
  });
});
