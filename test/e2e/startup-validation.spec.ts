import { Controller, Get } from '@nestjs/common';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitModule,
  SkipRateLimit,
} from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import { startApp } from '../support/test-app.js';

@Controller('orders')
class OrdersController {
  @Get()
  @RateLimit({ limit: 10, window: '10 minutes' })
  list() {
    return [];
  }
}

@Controller('users')
@RateLimit({ name: 'dup', limit: 1, window: '1s' }, { name: 'dup', limit: 2, window: '1s' })
class UsersController {
  @Get()
  list() {
    return [];
  }
}

@Controller('fine')
class FineController {
  @Get()
  list() {
    return [];
  }
}

@Controller('prototype')
class PrototypeNameController {
  @Get()
  @RateLimit({ limit: 10, window: '1m', algorithm: 'toString' as never })
  list() {
    return [];
  }
}

@Controller('login')
class LoginController {
  @Get()
  @RateLimit({ limit: 5, window: '1m', blockDuration: '15 minutes' })
  login() {
    return 'ok';
  }
}

@Controller('typo')
@RateLimit({ name: 'burst', limit: 10, window: '1m' })
class SkipTypoController {
  @Get()
  @SkipRateLimit('brust')
  list() {
    return [];
  }
}

const redis = useRedisServer();

/** Bad configuration stops the start with a message naming the route and the field. */
describe('start-up validation', () => {
  it('names the handler and field of an invalid decorator policy', async () => {
    await expect(
      startApp('express', [RateLimitModule.forRoot({})], [OrdersController]),
    ).rejects.toThrow(/on OrdersController\.list: window must be/);
  });

  it('names the handler of an unparseable blockDuration, as a RateLimitConfigError', async () => {
    const starting = startApp('express', [RateLimitModule.forRoot({})], [LoginController]);
    await expect(starting).rejects.toThrow(RateLimitConfigError);
    await expect(starting).rejects.toThrow(
      /"default" on LoginController\.login: blockDuration must be a positive number of ms or a duration/,
    );
  });

  it('rejects duplicate policy names on a controller', async () => {
    await expect(
      startApp('express', [RateLimitModule.forRoot({})], [UsersController]),
    ).rejects.toThrow(/"dup" on UsersController\.list: name is used twice/);
  });

  it('rejects an algorithm name that only Object.prototype knows', async () => {
    await expect(
      startApp('express', [RateLimitModule.forRoot({})], [PrototypeNameController]),
    ).rejects.toThrow(/on PrototypeNameController\.list: algorithm must be one of/);
  });

  it('rejects @SkipRateLimit names that match no policy of the route', async () => {
    await expect(
      startApp('express', [RateLimitModule.forRoot({})], [SkipTypoController]),
    ).rejects.toThrow(/@SkipRateLimit on SkipTypoController\.list: no policy named "brust"/);
  });

  it('rejects invalid module options', async () => {
    await expect(
      startApp(
        'express',
        [RateLimitModule.forRoot({ policies: [{ limit: -1, window: '1m' }] })],
        [FineController],
      ),
    ).rejects.toThrow(/RateLimitModule options: limit must be a positive integer/);
  });

  it('closes the Redis connection it opened when a route stops the start', async () => {
    /** Connections to the harness Redis other than the admin client's own. */
    const others = async () => {
      const clients = (await redis.admin.client('LIST')) as string;
      return clients.trim().split('\n').length - 1;
    };
    const starting = startApp(
      'express',
      [RateLimitModule.forRoot({ redis: redis.server.url })],
      [OrdersController],
    );
    await expect(starting).rejects.toThrow(RateLimitConfigError);
    // The connection is closed by the time the start has failed: nothing keeps the process up.
    expect(await others()).toBe(0);
  });
});
