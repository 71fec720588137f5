import {
  Controller,
  type ExecutionContext,
  Get,
  Module,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  RateLimit,
  RateLimitConfigError,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  RoutePlanner,
  SkipRateLimit,
} from '../../lib/index.js';
import { RecordingLogger } from '../support/test-app.js';

/**
 * The planner inside RateLimitModule, as an app starts it (its providers, no HTTP server):
 * the plans the guard gets for decorated controllers, inherited and skipped policies, and
 * start-up errors. route-planner.spec.ts holds the planner on its own, for mutation testing.
 */

@Controller('reports')
@RateLimit({ name: 'class', algorithm: 'fixed-window', limit: 3, window: '1m' })
class ReportsController {
  @Get()
  inherits() {}

  @Get('own')
  @RateLimit(
    { name: 'own', algorithm: 'token-bucket', limit: 1, window: '1m' },
    { name: 'weighted', limit: 9, window: '1h', cost: () => 2 },
  )
  own() {}

  @Get('skipped')
  @SkipRateLimit()
  skipped() {}

  @Get('skip-one')
  @SkipRateLimit('class')
  skipOne() {}
}

@Controller('open')
@SkipRateLimit()
class MostlyOpenController {
  @Get()
  open() {}

  @Get('limited')
  @RateLimit({ limit: 1, window: '1s' })
  limited() {}
}

@Controller('plain')
class PlainController {
  @Get()
  plain() {}
}

class BaseListing {
  @Get()
  list() {}
}

@Controller('strict')
@RateLimit({ limit: 1, window: '1m' })
class StrictListingController extends BaseListing {}

@Controller('loose')
@RateLimit({ limit: 5, window: '1m' })
class LooseListingController extends BaseListing {}

@Controller('long')
class AControllerWhoseNameIsLongEnoughThatItsRouteIdCannotStayReadable {
  @Get()
  @RateLimit({ limit: 1, window: '1m' })
  handlerWithAnEquallyLongName() {}
}

/** Two controllers of one name in different modules, as in a real app's feature modules. */
const twin = () => {
  @Controller()
  class TwinController {
    @Get()
    @RateLimit({ limit: 1, window: '1m' })
    find() {}
  }
  @Module({ controllers: [TwinController] })
  class TwinModule {}
  return { TwinController, TwinModule };
};
const first = twin();
const second = twin();

@Controller('typo')
@RateLimit({ name: 'burst', limit: 10, window: '1m' })
class SkipTypoController {
  @Get()
  @SkipRateLimit('brust')
  list() {}
}

@Controller('guarded')
@UseGuards(RateLimitGuard)
class GuardedController {
  @Get()
  @RateLimit({ limit: 1, window: '1m' })
  find() {}
}

class OwnGuard extends RateLimitGuard {}

@Controller('guarded-handler')
class GuardedHandlerController {
  @Get()
  @UseGuards(OwnGuard)
  find() {}
}

/** A route whose limit depends on the user's plan, next to one with a fixed limit. */
@Controller('plans')
class PlansController {
  @Get('fixed')
  @RateLimit({ limit: 3, window: '1m' })
  fixed() {}

  @Get('by-plan')
  @RateLimit({
    name: 'plan',
    limit: (context) =>
      context.switchToHttp().getRequest<{ user: { plan: string } }>().user.plan === 'pro' ? 10 : 2,
    window: '1m',
  })
  byPlan() {}
}

/** Starts the module's providers only (no HTTP server) and hands back the planner. */
async function plannerFor(
  controllers: Type[],
  { imports = [], ...options }: RateLimitModuleOptions & { imports?: Type[] } = {},
): Promise<{ planner: RoutePlanner; close: () => Promise<void> }> {
  const moduleRef = await Test.createTestingModule({
    imports: [RateLimitModule.forRoot(options), ...imports],
    controllers,
  })
    .setLogger(new RecordingLogger())
    .compile();
  await moduleRef.init();
  return { planner: moduleRef.get(RoutePlanner), close: () => moduleRef.close() };
}

/** Each policy of the handler's plan as 'name routeId'. */
const summary = (
  planner: RoutePlanner,
  controller: Type,
  handler: keyof typeof controller.prototype,
) => {
  const plan = planner.planFor(controller.prototype[handler], controller);
  return plan.policies.map(
    // The key suffix is ':name:algorithm-code[:route id]'; the code is the stores' business.
    (policy) => `${policy.name} ${policy.keySuffix.split(':')[3] ?? '(no route)'}`,
  );
};

describe('RoutePlanner in RateLimitModule', () => {
  let planner: RoutePlanner;
  let close: () => Promise<void>;
  // Planned afresh for each test (not once in beforeAll), so mutation testing can tell
  // which tests cover which planning code.
  beforeEach(async () => {
    ({ planner, close } = await plannerFor(
      [
        ReportsController,
        MostlyOpenController,
        PlainController,
        StrictListingController,
        LooseListingController,
        AControllerWhoseNameIsLongEnoughThatItsRouteIdCannotStayReadable,
      ],
      {
        imports: [first.TwinModule, second.TwinModule],
        policies: [{ name: 'module', limit: 100, window: '1m' }],
      },
    ));
  });
  afterEach(() => close());

  it("gives a handler without @RateLimit its controller's policies, under its own route id", () => {
    expect(summary(planner, ReportsController, 'inherits')).toEqual([
      'class ReportsController.inherits',
    ]);
  });

  it("lets a handler's @RateLimit replace its controller's", () => {
    const plan = planner.planFor(ReportsController.prototype.own, ReportsController);
    expect(summary(planner, ReportsController, 'own')).toEqual([
      'own ReportsController.own',
      'weighted ReportsController.own',
    ]);
    expect(plan.fixedCosts).toBeUndefined();
    expect(plan.policyHeader).toBe('"own";q=1;w=60, "weighted";q=9;w=3600');
  });

  it('drops skipped policies: all with no names, the named ones otherwise', () => {
    expect(summary(planner, ReportsController, 'skipped')).toEqual([]);
    expect(summary(planner, ReportsController, 'skipOne')).toEqual([]);
    expect(summary(planner, MostlyOpenController, 'open')).toEqual([]);
  });

  it("lets a handler's @RateLimit escape its controller's @SkipRateLimit", () => {
    expect(summary(planner, MostlyOpenController, 'limited')).toEqual([
      'default MostlyOpenController.limited',
    ]);
  });

  it('gives undecorated handlers the module policies, shared across routes (no route id)', () => {
    expect(summary(planner, PlainController, 'plain')).toEqual(['module (no route)']);
    const plan = planner.planFor(PlainController.prototype.plain, PlainController);
    expect(plan).toMatchObject({ fixedCosts: [1], sharesModuleKey: true });
  });

  it('plans an inherited handler per controller', () => {
    const strict = planner.planFor(BaseListing.prototype.list, StrictListingController);
    const loose = planner.planFor(BaseListing.prototype.list, LooseListingController);
    expect([strict.policies[0].limit, loose.policies[0].limit]).toEqual([1, 5]);
    expect(summary(planner, StrictListingController, 'list')).toEqual([
      'default StrictListingController.list',
    ]);
    expect(summary(planner, LooseListingController, 'list')).toEqual([
      'default LooseListingController.list',
    ]);
  });

  it('hashes a route id that is too long to stay readable, to a bounded one', () => {
    const [suffix] = summary(
      planner,
      AControllerWhoseNameIsLongEnoughThatItsRouteIdCannotStayReadable,
      'handlerWithAnEquallyLongName',
    );
    expect(suffix).toMatch(/^default #[\w-]{22}$/);
  });

  it('numbers two controllers of one name apart', () => {
    const ids = [first, second].map(({ TwinController }) =>
      summary(planner, TwinController, 'find'),
    );
    expect(ids.sort()).toEqual([
      ['default TwinController.find'],
      ['default TwinController.find~2'],
    ]);
  });

  it('plans the same handler and controller to the same object every time', () => {
    const plan = planner.planFor(ReportsController.prototype.own, ReportsController);
    expect(planner.planFor(ReportsController.prototype.own, ReportsController)).toBe(plan);
  });
});

describe('RoutePlanner in RateLimitModule, at start-up', () => {
  it('refuses a @SkipRateLimit naming no policy of the route', async () => {
    const starting = plannerFor([SkipTypoController]);
    await expect(starting).rejects.toThrow(RateLimitConfigError);
    await expect(plannerFor([SkipTypoController])).rejects.toThrow(
      'Invalid @SkipRateLimit on SkipTypoController.list: no policy named "brust" applies there',
    );
  });

  it('marks handlers under @UseGuards(RateLimitGuard) or a subclass, so the global guard yields to it', async () => {
    const { planner, close } = await plannerFor(
      [GuardedController, GuardedHandlerController, PlainController],
      { policies: [{ limit: 10, window: '1m' }] },
    );
    const marked = (controller: Type, handler: string) =>
      planner.planFor(controller.prototype[handler], controller).guardedExplicitly;
    expect([
      marked(GuardedController, 'find'),
      marked(GuardedHandlerController, 'find'),
      marked(PlainController, 'plain'),
    ]).toEqual([true, true, false]);
    await close();
  });

  it('gives only routes with limit functions a per-request path and a per-response RateLimit-Policy', async () => {
    const { planner, close } = await plannerFor([PlansController], {
      policies: [{ name: 'module', limit: () => 1, window: '1s' }],
    });
    const fixed = planner.planFor(PlansController.prototype.fixed, PlansController);
    const byPlan = planner.planFor(PlansController.prototype.byPlan, PlansController);
    expect(fixed.limits).toBeUndefined();
    expect(fixed.policyHeader).toBe('"default";q=3;w=60');
    expect(byPlan.policyHeader).toBeUndefined();
    const pro = { switchToHttp: () => ({ getRequest: () => ({ user: { plan: 'pro' } }) }) };
    const sized = await byPlan.limits!.resolve(pro as unknown as ExecutionContext);
    expect(sized.map(({ limit }) => limit)).toEqual([10]);
    await close();
  });
});
