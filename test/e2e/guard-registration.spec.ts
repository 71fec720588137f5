import {
  Controller,
  type ExecutionContext,
  Get,
  Injectable,
  Module,
  UseGuards,
} from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import {
  RateLimit,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RoutePlan,
} from '../../lib/index.js';
import { useRedisServer } from '../support/redis-fixture.js';
import {
  type AdapterKind,
  byClientHeader,
  sequentially,
  startApp,
  withApp,
} from '../support/test-app.js';

/** In a feature module that does not import RateLimitModule: the guard resolves from its exports. */
@Controller('guarded')
@UseGuards(RateLimitGuard)
@RateLimit({ limit: 2, window: '1m' })
class GuardedController {
  @Get()
  find() {
    return 'ok';
  }
}

@Controller('open')
@RateLimit({ limit: 2, window: '1m' })
class UnguardedController {
  @Get()
  find() {
    return 'ok';
  }
}

@Module({ controllers: [GuardedController, UnguardedController] })
class FeatureModule {}

@Controller('mixed')
@RateLimit({ limit: 2, window: '1m' })
class MixedController {
  @Get('guarded')
  @UseGuards(RateLimitGuard)
  guarded() {
    return 'ok';
  }

  @Get('open')
  open() {
    return 'ok';
  }
}

/** A guard of the app's own: keys by tenant header and gives each tenant's clients one budget. */
@Injectable()
class TenantRateLimitGuard extends RateLimitGuard {
  protected override clientKeys(context: ExecutionContext, plan: RoutePlan): string[] {
    const tenant = context.switchToHttp().getRequest<{ headers: Record<string, string> }>().headers[
      'x-client'
    ];
    return plan.policies.map(() => `tenant:${tenant.split('/')[0]}`);
  }
}

@Controller('tenant')
@UseGuards(TenantRateLimitGuard)
@RateLimit({ limit: 2, window: '1m' })
class TenantController {
  @Get()
  find() {
    return 'ok';
  }
}

@Module({
  controllers: [UnguardedController],
  providers: [{ provide: APP_GUARD, useClass: TenantRateLimitGuard }],
})
class TenantAppModule {}

const redis = useRedisServer();

describe.each<AdapterKind>(['express', 'fastify'])('guard registration on %s', (adapter) => {
  const module = (options: RateLimitModuleOptions = {}) =>
    RateLimitModule.forRoot({
      redis: redis.server.url,
      prefix: `registration-${adapter}`,
      keyBy: byClientHeader,
      guard: false,
      ...options,
    });
  let client = 0;
  const nextClient = () => `client-${++client}-${Date.now()}`;

  it('@UseGuards(RateLimitGuard) on a controller limits that controller only', async () => {
    await withApp(startApp(adapter, [module(), FeatureModule], []), async (running) => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/guarded', who))).toEqual([200, 200, 429]);
      const denied = await running.get('/guarded', who);
      expect(denied.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(denied.headers.get('ratelimit-policy')).toBe('"default";q=2;w=60');
      expect(await sequentially(3, () => running.get('/open', who))).toEqual([200, 200, 200]);
    });
  });

  it('@UseGuards(RateLimitGuard) on a handler limits that handler only', async () => {
    await withApp(startApp(adapter, [module()], [MixedController]), async (running) => {
      const who = nextClient();
      expect(await sequentially(3, () => running.get('/mixed/guarded', who))).toEqual([
        200, 200, 429,
      ]);
      expect(await sequentially(3, () => running.get('/mixed/open', who))).toEqual([200, 200, 200]);
    });
  });

  it('guard: false with a subclass registered as APP_GUARD runs the subclass on every route', async () => {
    await withApp(startApp(adapter, [module(), TenantAppModule], []), async (running) => {
      const tenant = nextClient();
      const results = [
        ...(await sequentially(2, () => running.get('/open', `${tenant}/alice`))),
        ...(await sequentially(1, () => running.get('/open', `${tenant}/bob`))),
      ];
      expect(results).toEqual([200, 200, 429]);
      expect((await running.get('/open', `other-${tenant}/carol`)).status).toBe(200);
    });
  });

  it('with the global guard on, a guard applied by @UseGuards decides alone: nothing is charged twice', async () => {
    await withApp(
      startApp(adapter, [module({ guard: true }), FeatureModule], [TenantController]),
      async (running) => {
        const who = nextClient();
        expect(await sequentially(3, () => running.get('/guarded', who))).toEqual([200, 200, 429]);
        const tenant = nextClient();
        const results = [
          ...(await sequentially(2, () => running.get('/tenant', `${tenant}/alice`))),
          ...(await sequentially(1, () => running.get('/tenant', `${tenant}/bob`))),
        ];
        expect(results).toEqual([200, 200, 429]);
        expect(await sequentially(3, () => running.get('/open', who))).toEqual([200, 200, 429]);
      },
    );
  });
});
