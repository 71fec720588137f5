import { Controller, Get, HttpCode, Post, type Type } from '@nestjs/common';
import {
  ApiProperty,
  ApiTooManyRequestsResponse,
  DocumentBuilder,
  type OpenAPIObject,
  SwaggerModule,
} from '@nestjs/swagger';
import {
  RateLimit,
  type RateLimitModuleOptions,
  RateLimitModule,
  SkipRateLimit,
} from '../../lib/index.js';
import { type AdapterKind, startApp } from '../support/test-app.js';

/** A fresh class each time: the OpenAPI metadata lives on the handlers, shared by every app. */
function itemsController(): Type {
  @Controller('items')
  class ItemsController {
    @Get()
    @RateLimit({ name: 'reads', limit: 5, window: '1m' })
    list() {
      return [];
    }

    @Post()
    @RateLimit({ name: 'writes', limit: 1, window: '1s', failureMode: 'closed' })
    create() {
      return {};
    }

    @Post('import')
    @HttpCode(202)
    @RateLimit({ name: 'imports', limit: 1, window: '1s' })
    importItems() {
      return {};
    }

    @Get('local')
    @RateLimit({ name: 'shared', limit: 4, window: '1s', failureMode: 'local' })
    decidedLocallyOnFailure() {
      return {};
    }

    @Get('mixed')
    @RateLimit(
      { name: 'reads', limit: 5, window: '1m' },
      { name: 'paid', limit: 1, window: '1s', failureMode: 'closed' },
    )
    strictestIsClosed() {
      return {};
    }

    @Get('module')
    underModulePolicies() {
      return {};
    }

    @Get('skipped')
    @SkipRateLimit()
    skipped() {
      return {};
    }

    @Get('shadow')
    @RateLimit({ name: 'trial', limit: 1, window: '1s', shadow: true })
    shadowOnly() {
      return {};
    }

    @Get('own')
    @RateLimit({ name: 'reads', limit: 5, window: '1m' })
    @ApiTooManyRequestsResponse({ description: 'documented by the app' })
    documentedByTheApp() {
      return {};
    }
  }
  return ItemsController;
}

class TooBusyBody {
  @ApiProperty({ description: 'Try again later.' })
  readonly busy!: boolean;
}

const MODULE_POLICIES: RateLimitModuleOptions = {
  policies: [{ name: 'default', limit: 100, window: '1m' }],
  instances: 2,
};

/** The OpenAPI document of an app of `controller` with these module options. */
async function documentOf(
  adapter: AdapterKind,
  options: RateLimitModuleOptions,
  controller = itemsController(),
): Promise<OpenAPIObject> {
  const running = await startApp(adapter, [RateLimitModule.forRoot(options)], [controller]);
  try {
    return SwaggerModule.createDocument(running.app, new DocumentBuilder().build());
  } finally {
    await running.close();
  }
}

type Responses = Record<string, { description?: string; headers?: object; content?: object }>;
const responses = (document: OpenAPIObject, path: string, method: 'get' | 'post') =>
  document.paths[path][method]!.responses as Responses;
const statuses = (document: OpenAPIObject, path: string, method: 'get' | 'post' = 'get') =>
  Object.keys(responses(document, path, method)).sort();
const bodySchema = (response: { content?: object } | undefined) =>
  (response?.content as Record<string, { schema?: unknown }> | undefined)?.['application/json']
    ?.schema;

describe.each(['express', 'fastify'] as const)(
  'OpenAPI document with @nestjs/swagger (%s)',
  (adapter) => {
    it('documents a 429 with RateLimit, RateLimit-Policy, Retry-After and the body on every limited route, a 503 only where failureMode is closed, none on skipped or shadow-only routes', async () => {
      const document = await documentOf(adapter, MODULE_POLICIES);
      expect(statuses(document, '/items')).toEqual(['200', '429']);
      expect(statuses(document, '/items', 'post')).toEqual(['201', '429', '503']);
      expect(statuses(document, '/items/import', 'post')).toEqual(['202', '429']);
      expect(statuses(document, '/items/local')).toEqual(['200', '429']);
      expect(statuses(document, '/items/mixed')).toEqual(['200', '429', '503']);
      expect(statuses(document, '/items/module')).toEqual(['200', '429']);
      expect(statuses(document, '/items/skipped')).toEqual(['200']);
      expect(statuses(document, '/items/shadow')).toEqual(['200']);

      const limited = responses(document, '/items', 'get')['429'];
      expect(Object.keys(limited.headers!).sort()).toEqual([
        'RateLimit',
        'RateLimit-Policy',
        'Retry-After',
      ]);
      expect(limited.headers).toMatchObject({
        'RateLimit-Policy': { schema: { type: 'string', example: '"reads";q=5;w=60' } },
        'Retry-After': { schema: { type: 'integer', minimum: 1 } },
      });
      expect(bodySchema(limited)).toEqual({
        type: 'object',
        required: ['statusCode', 'error', 'message', 'retryAfter'],
        properties: {
          statusCode: { type: 'integer', enum: [429] },
          error: { type: 'string', example: 'Too Many Requests' },
          message: { type: 'string', example: expect.any(String) },
          retryAfter: expect.objectContaining({ type: 'integer', minimum: 1 }),
        },
      });
      const unavailable = responses(document, '/items', 'post')['503'];
      expect(Object.keys(unavailable.headers!)).toEqual(['Retry-After']);
      expect(bodySchema(unavailable)).toMatchObject({
        properties: { statusCode: { enum: [503] } },
      });
    });

    it('leaves a 429 the route documents itself as it wrote it (and, as swagger does, adds no success response beside it)', async () => {
      const document = await documentOf(adapter, MODULE_POLICIES);
      expect(statuses(document, '/items/own')).toEqual(['429']);
      expect(responses(document, '/items/own', 'get')['429'].description).toBe(
        'documented by the app',
      );
    });

    it("module failureMode 'closed', legacy headers, custom bodies: 503 everywhere limited, X-RateLimit-*, the schemas the openApi option names", async () => {
      const limitedSchema = {
        type: 'object',
        properties: { slowDown: { type: 'boolean' } },
      };
      const document = await documentOf(adapter, {
        ...MODULE_POLICIES,
        failureMode: 'closed',
        headers: 'legacy',
        limitedResponse: () => ({ slowDown: true }),
        unavailableResponse: () => ({ busy: true }),
        openApi: { limitedSchema, unavailableSchema: TooBusyBody },
      });
      expect(statuses(document, '/items')).toEqual(['200', '429', '503']);
      expect(statuses(document, '/items/module')).toEqual(['200', '429', '503']);
      expect(statuses(document, '/items/skipped')).toEqual(['200']);
      const limited = responses(document, '/items', 'get')['429'];
      expect(Object.keys(limited.headers!).sort()).toEqual([
        'Retry-After',
        'X-RateLimit-Limit',
        'X-RateLimit-Remaining',
        'X-RateLimit-Reset',
      ]);
      expect(bodySchema(limited)).toEqual(limitedSchema);
      expect(bodySchema(responses(document, '/items', 'get')['503'])).toEqual({
        $ref: '#/components/schemas/TooBusyBody',
      });
      expect(document.components?.schemas?.TooBusyBody).toMatchObject({
        properties: { busy: { type: 'boolean' } },
      });
    });

    it("headers 'none': Retry-After alone; a custom body without a schema: none documented", async () => {
      const document = await documentOf(adapter, {
        ...MODULE_POLICIES,
        headers: 'none',
        limitedResponse: () => 'slow down',
      });
      const limited = responses(document, '/items', 'get')['429'];
      expect(Object.keys(limited.headers!)).toEqual(['Retry-After']);
      expect(limited.content).toBeUndefined();
    });

    it('documents nothing with openApi: false, nor in a dry run', async () => {
      for (const options of [{ openApi: false }, { dryRun: true }] as RateLimitModuleOptions[]) {
        const document = await documentOf(adapter, { ...MODULE_POLICIES, ...options });
        expect(statuses(document, '/items')).toEqual(['200']);
        expect(statuses(document, '/items', 'post')).toEqual(['201']);
      }
    });

    it('an app built after another on the same controllers documents its own answers, not those of the first', async () => {
      const controller = itemsController();
      const closed = await documentOf(
        adapter,
        { ...MODULE_POLICIES, failureMode: 'closed' },
        controller,
      );
      expect(statuses(closed, '/items')).toEqual(['200', '429', '503']);
      const open = await documentOf(adapter, { ...MODULE_POLICIES, dryRun: true }, controller);
      expect(statuses(open, '/items')).toEqual(['200']);
      const again = await documentOf(adapter, MODULE_POLICIES, controller);
      expect(statuses(again, '/items')).toEqual(['200', '429']);
      expect(responses(again, '/items/own', 'get')['429'].description).toBe(
        'documented by the app',
      );
    });
  },
);
