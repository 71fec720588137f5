import { createHash } from 'node:crypto';
import {
  type CanActivate,
  Controller,
  Get,
  Injectable,
  Module,
  SetMetadata,
  type Type,
  UseGuards,
} from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { RateLimit, SkipRateLimit } from '../../lib/rate-limit.decorator.js';
import { RATE_LIMIT_GUARD_METADATA, RATE_LIMIT_OPTIONS } from '../../lib/rate-limit.constants.js';
import type { RateLimitPolicy } from '../../lib/interfaces/rate-limit-policy.interface.js';
import { RoutePlanner, type RouteTarget } from '../../lib/guard/route-planner.js';

/**
 * The planner on its own: a Nest module with only RoutePlanner and the classes under test,
 * not RateLimitModule (whose guard, service and stores would tie this file to every mutant
 * of the library in `npm run test:mutation`). route-planner.app.spec.ts covers it inside the
 * module; this file pins each rule's edge: what start-up plans, the plan's fields, route ids.
 */

/** Stands in for RateLimitGuard: the planner knows the guard by this metadata alone. */
@Injectable()
@SetMetadata(RATE_LIMIT_GUARD_METADATA, true)
class MarkedGuard implements CanActivate {
  canActivate() {
    return true;
  }
}
class MarkedSubclass extends MarkedGuard {}
@Injectable()
class OtherGuard implements CanActivate {
  canActivate() {
    return true;
  }
}
@SetMetadata(RATE_LIMIT_GUARD_METADATA, 'yes')
class NotQuiteMarked extends OtherGuard {}

@Controller('plain')
class PlainController {
  @Get()
  find() {}
}

@Controller('costs')
class CostsController {
  @Get('fixed')
  @RateLimit(
    { name: 'a', limit: 5, window: '1s', cost: 2 },
    { name: 'b', algorithm: 'token-bucket', limit: 2, window: '1s', burst: 6, cost: 3 },
  )
  fixed() {}

  @Get('priced')
  @RateLimit(
    { name: 'a', limit: 5, window: '1s' },
    { name: 'b', limit: 5, window: '1s', cost: () => 1 },
  )
  priced() {}

  @Get('keyed')
  @RateLimit(
    { name: 'a', limit: 5, window: '1s' },
    { name: 'b', limit: 5, window: '1s', keyBy: () => 'k' },
  )
  keyed() {}

  @Get('skip-all')
  @SkipRateLimit()
  skipAll() {}

  @Get('per-plan')
  @RateLimit({ name: 'a', limit: 5, window: '1s' }, { name: 'plan', limit: () => 2, window: '1s' })
  perPlan() {}

  @Get('unknown-plan')
  @RateLimit({ name: 'plan', limit: () => 0, window: '1s' })
  unknownPlan() {}
}

@Controller('partly')
@RateLimit({ name: 'x', limit: 1, window: 1 }, { name: 'y', limit: 2, window: 1 })
@SkipRateLimit('x')
class PartlySkippedController {
  @Get()
  inherits() {}

  @Get('own')
  @RateLimit({ name: 'z', limit: 3, window: 1 })
  own() {}

  @Get('skip-y')
  @SkipRateLimit('y')
  skipY() {}
}

@Controller('guards')
@UseGuards(MarkedGuard)
class ClassGuarded {
  @Get()
  find() {}
}

@Controller('guards2')
class HandlerGuarded {
  @Get('sub')
  @UseGuards(MarkedSubclass)
  sub() {}

  @Get('instance')
  @UseGuards(new MarkedGuard())
  instance() {}

  @Get('other')
  @UseGuards(OtherGuard, NotQuiteMarked)
  other() {}

  @Get('null')
  @SetMetadata(GUARDS_METADATA, [null, MarkedGuard])
  nulls() {}
}

/** A name that cannot stay readable in keys (too long). */
@Controller('long')
class AControllerWithANameLongEnoughThatTheRouteIdMustBeHashedToo {
  @Get()
  handlerWithAnotherFairlyLongName() {}
}

/** Each call makes a new class of the same name, as feature modules do. */
const namedTwice = () => {
  @Controller()
  class Twin {
    @Get()
    find() {}
  }
  return Twin;
};

/** Nest's start-up logs stay out of the test output. */
const quiet = { log() {}, error() {}, warn() {} };

/** Starts RoutePlanner over `controllers` and `providers`; `policies` are the module's. */
async function planner(
  controllers: Type[],
  {
    providers = [],
    imports = [],
    policies = [{ name: 'module', limit: 10, window: '1m' }],
    logger = quiet,
    instances,
  }: {
    providers?: unknown[];
    imports?: Type[];
    policies?: unknown[];
    logger?: typeof quiet;
    /** The module option: how many instances share the limits in failure mode 'local'. */
    instances?: number;
  } = {},
): Promise<{ planner: RoutePlanner; close: () => Promise<void> }> {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule, ...imports],
    controllers,
    providers: [
      RoutePlanner,
      {
        provide: RATE_LIMIT_OPTIONS,
        useValue: { policies: policies as RateLimitPolicy[], defaults: {}, instances },
      },
      { provide: 'nothing', useFactory: () => null },
      ...(providers as Type[]),
    ],
  })
    .setLogger(logger)
    .compile();
  await moduleRef.init();
  const planner = moduleRef.get(RoutePlanner);
  // As RateLimitModule does at start.
  try {
    planner.planAll();
  } catch (error) {
    await moduleRef.close();
    throw error;
  }
  return { planner, close: () => moduleRef.close() };
}

const handler = (owner: Type, name: string) =>
  (owner.prototype as Record<string, RouteTarget>)[name];
const planOf = (p: RoutePlanner, owner: Type, name: string) =>
  p.planFor(handler(owner, name), owner);

describe("RoutePlanner's log", () => {
  it("names the limiter as the context of what a route's limit functions log", async () => {
    const warned: unknown[][] = [];
    const { planner: p, close } = await planner([CostsController], {
      logger: { ...quiet, warn: (...args: unknown[]) => void warned.push(args) },
    });
    try {
      const limits = planOf(p, CostsController, 'unknownPlan').limits!;
      await expect(limits.resolve({} as never)).rejects.toThrow('not a positive integer');
      expect(warned).toEqual([[expect.stringContaining('its limit function gave 0'), 'RateLimit']]);
    } finally {
      await close();
    }
  });
});

describe('RoutePlanner plans', () => {
  let p: RoutePlanner;
  let close: () => Promise<void>;
  beforeEach(async () => {
    ({ planner: p, close } = await planner([
      PlainController,
      CostsController,
      PartlySkippedController,
      ClassGuarded,
      HandlerGuarded,
      AControllerWithANameLongEnoughThatTheRouteIdMustBeHashedToo,
    ]));
  });
  afterEach(() => close());

  it('gives a skipped handler the empty plan', () => {
    expect(planOf(p, CostsController, 'skipAll')).toEqual({
      route: '',
      policies: [],
      fixedCosts: [],
      sharesModuleKey: true,
      policyHeader: '',
      guardedExplicitly: false,
      failureMode: 'open',
      countsOutcomes: false,
    });
  });

  it("plans an undecorated handler on the module's policies, without the route in keys", () => {
    const plan = planOf(p, PlainController, 'find');
    expect(plan).toMatchObject({
      route: 'PlainController.find',
      fixedCosts: [1],
      sharesModuleKey: true,
      policyHeader: '"module";q=10;w=60',
      guardedExplicitly: false,
    });
    expect(plan.policies.map((policy) => [policy.scope, policy.keySuffix])).toEqual([
      ['global', ':module:swc2'],
    ]);
  });

  it('keeps fixed costs, and a header with each capacity, when no policy prices the request', () => {
    expect(planOf(p, CostsController, 'fixed')).toMatchObject({
      route: 'CostsController.fixed',
      fixedCosts: [2, 3],
      sharesModuleKey: true,
      policyHeader: '"a";q=5;w=1, "b";q=6;w=3',
    });
  });

  it('gives a route with a limit function per-request limits and no fixed header', () => {
    const plan = planOf(p, CostsController, 'perPlan');
    expect(plan).toMatchObject({ fixedCosts: [1, 1], policyHeader: undefined });
    expect(plan.limits).toBeDefined();
    expect(planOf(p, CostsController, 'fixed').limits).toBeUndefined();
    expect(planOf(p, PlainController, 'find').limits).toBeUndefined();
  });

  it('drops fixed costs when a policy has a cost function, and the shared key when one has its own keyBy', () => {
    expect(planOf(p, CostsController, 'priced')).toMatchObject({
      fixedCosts: undefined,
      sharesModuleKey: true,
    });
    expect(planOf(p, CostsController, 'keyed')).toMatchObject({
      fixedCosts: [1, 1],
      sharesModuleKey: false,
    });
  });

  it("applies a class's named skip to inherited policies; a handler's own decorators replace the class's", () => {
    const names = (name: string) =>
      planOf(p, PartlySkippedController, name).policies.map((policy) => policy.keySuffix);
    expect(names('inherits')).toEqual([':y:swc2:PartlySkippedController.inherits']);
    expect(names('own')).toEqual([':z:swc2:PartlySkippedController.own']);
    expect(names('skipY')).toEqual([':x:swc2:PartlySkippedController.skipY']);
  });

  it('marks handlers under a guard carrying the rate-limit mark, on the handler or its class', () => {
    const guarded = [
      planOf(p, ClassGuarded, 'find'),
      planOf(p, HandlerGuarded, 'sub'),
      planOf(p, HandlerGuarded, 'instance'),
      planOf(p, HandlerGuarded, 'nulls'),
      planOf(p, HandlerGuarded, 'other'),
      planOf(p, PlainController, 'find'),
    ].map((plan) => plan.guardedExplicitly);
    expect(guarded).toEqual([true, true, true, true, false, false]);
  });

  it('hashes a route id that cannot stay readable', () => {
    const label =
      'AControllerWithANameLongEnoughThatTheRouteIdMustBeHashedToo.handlerWithAnotherFairlyLongName';
    const hash = '#' + createHash('sha256').update(label).digest('base64url').slice(0, 22);
    expect(
      planOf(
        p,
        AControllerWithANameLongEnoughThatTheRouteIdMustBeHashedToo,
        'handlerWithAnotherFairlyLongName',
      ).route,
    ).toBe(hash);
  });
});

describe('RoutePlanner route ids', () => {
  /** A class of its own whose `${name}.find` label is `label`. */
  const classNamed = (name: string) => {
    const Named = namedTwice();
    Object.defineProperty(Named, 'name', { value: name });
    return Named;
  };

  it.each([
    ['A.b$c', 'A.b$c.find'],
    ['x'.repeat(59), `${'x'.repeat(59)}.find`],
  ])('keeps %s readable', async (name, id) => {
    const Named = classNamed(name);
    const { planner: p, close } = await planner([Named]);
    expect(planOf(p, Named, 'find').route).toBe(id);
    await close();
  });

  it.each(['x'.repeat(60), 'Ü', 'Ü-', '-Ü', 'a b'])(
    'hashes the label of a class named %p',
    async (name) => {
      const { planner: p, close } = await planner([]);
      const label = `${name}.find`;
      expect(planOf(p, classNamed(name), 'find').route).toBe(
        '#' + createHash('sha256').update(label).digest('base64url').slice(0, 22),
      );
      await close();
    },
  );

  it('numbers two classes of one name that inherit one handler, and another handler of one name on one class', async () => {
    class Base {
      list() {}
    }
    const [First, Second] = [0, 1].map(() => {
      class Shelf extends Base {}
      return Shelf;
    });
    const { planner: p, close } = await planner([]);
    expect([planOf(p, First, 'list').route, planOf(p, Second, 'list').route]).toEqual([
      'Shelf.list',
      'Shelf.list~2',
    ]);
    // The same label from a handler the class did not have before (Nest never asks this).
    const stranger = { name: 'list' };
    expect(p.planFor(stranger, First).route).toBe('Shelf.list~3');
    expect(planOf(p, First, 'list').route).toBe('Shelf.list');
    await close();
  });

  it('numbers classes of one name in the order start-up found them, whatever the order asked', async () => {
    const twins = [namedTwice(), namedTwice(), namedTwice()];
    const modules = twins.map((Twin) => {
      @Module({ controllers: [Twin] })
      class Feature {}
      return Feature;
    });
    const { planner: p, close } = await planner([], { imports: modules });
    expect([2, 1, 0].map((i) => planOf(p, twins[i], 'find').route)).toEqual([
      'Twin.find~3',
      'Twin.find~2',
      'Twin.find',
    ]);
    await close();
  });
});

describe('RoutePlanner at start-up', () => {
  @Controller('login')
  class LocalLoginController {
    @Get()
    @RateLimit({ limit: 5, window: '1m', failureMode: 'local' })
    login() {}
  }

  it("plans a route failing over to 'local' only with the module's instances", async () => {
    await expect(planner([LocalLoginController])).rejects.toThrow(
      /LocalLoginController\.login: failureMode 'local' needs the module option instances/,
    );
    const { planner: p, close } = await planner([LocalLoginController], { instances: 3 });
    expect(planOf(p, LocalLoginController, 'login').failureMode).toBe('local');
    await close();
  });

  @Injectable()
  class ResolverWithMethodLimits {
    authors() {}

    @RateLimit({ limit: 0, window: 1 })
    books() {}
  }
  @Injectable()
  @RateLimit({ limit: 1, window: 'soon' })
  class GatewayWithClassLimits {
    message() {}
  }
  @Injectable()
  @SkipRateLimit('nope')
  class GatewayWithClassSkip {
    message() {}
  }
  class BuiltByAFactory {
    @RateLimit({ limit: 0, window: 1 })
    run() {}
  }

  it.each([
    [
      ResolverWithMethodLimits,
      'Invalid rate limit policy "default" on ResolverWithMethodLimits.books: limit must be a positive integer or a function (got 0)',
    ],
    [
      GatewayWithClassLimits,
      `Invalid rate limit policy "default" on GatewayWithClassLimits.message: window must be a positive number of ms or a duration like '250ms', '10s', '1m', '1h', '1d' (got "soon")`,
    ],
    [
      GatewayWithClassSkip,
      'Invalid @SkipRateLimit on GatewayWithClassSkip.message: no policy named "nope" applies there',
    ],
  ])(
    'plans a provider carrying the decorators, so %p fails the start',
    async (provider, message) => {
      await expect(planner([], { providers: [provider] })).rejects.toThrow(message);
    },
  );

  it('fails the start on module policies that cannot apply to a controller, naming both', async () => {
    await expect(
      planner([PlainController], { policies: [{ limit: 1, window: 1, cost: 2 }] }),
    ).rejects.toThrow(
      'Invalid rate limit policy "default" on RateLimitModule options (for PlainController.find): cost 2 exceeds what the policy can ever admit (1)',
    );
  });

  it('names every unknown policy of a @SkipRateLimit', async () => {
    @Controller()
    @RateLimit({ name: 'known', limit: 1, window: 1 })
    class Typos {
      @Get()
      @SkipRateLimit('known', 'nope', 'nah')
      find() {}
    }
    await expect(planner([Typos])).rejects.toThrow(
      'Invalid @SkipRateLimit on Typos.find: no policy named "nope", "nah" applies there',
    );
  });

  it('leaves undecorated providers and instances built by factories unplanned', async () => {
    const Undecorated = namedTwice();
    const { planner: p, close } = await planner([], {
      providers: [Undecorated, { provide: 'built', useFactory: () => new BuiltByAFactory() }],
    });
    // Planned at start-up, it would hold the plain id, and a class of the same name asked
    // later would be numbered.
    expect(planOf(p, namedTwice(), 'find').route).toBe('Twin.find');
    await close();
  });

  it('plans controllers at start-up even when they carry no decorator', async () => {
    const Early = namedTwice();
    const { planner: p, close } = await planner([Early]);
    expect(planOf(p, namedTwice(), 'find').route).toBe('Twin.find~2');
    expect(planOf(p, Early, 'find').route).toBe('Twin.find');
    await close();
  });
});
