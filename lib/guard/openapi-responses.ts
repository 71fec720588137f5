import { HttpStatus, type Logger, RequestMethod } from '@nestjs/common';
import { HTTP_CODE_METADATA, METHOD_METADATA } from '@nestjs/common/constants.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import type {
  RateLimitOpenApiSchema,
  RateLimitResponseOption,
} from '../interfaces/rate-limit-response.interface.js';
import type { RoutePlan, RoutePlanner, RouteTarget } from './route-planner.js';

/** What the limiter uses of `@nestjs/swagger` (the same in its versions 11 and 12). */
export interface SwaggerDecorators {
  readonly ApiResponse: (
    options: Record<string, unknown>,
  ) => (target: object, key: string, descriptor: PropertyDescriptor) => unknown;
  readonly DECORATORS: { readonly API_RESPONSE: string };
}

/**
 * `@nestjs/swagger` if the app has it (an optional peer, loaded only here), else undefined.
 * One that is installed but fails to load is logged and left out: the app starts without
 * the limiter's responses in its document.
 */
export async function loadSwagger(logger: Logger): Promise<SwaggerDecorators | undefined> {
  try {
    return (await import('@nestjs/swagger')) as unknown as SwaggerDecorators;
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    const missing =
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      message?.includes('@nestjs/swagger') === true;
    if (!missing) {
      logger.warn(`@nestjs/swagger failed to load (${message}): no 429/503 documented`);
    }
    return undefined;
  }
}

/** The statuses this module documented on a handler, so another app's pass can replace them. */
const DOCUMENTED = 'nestjs-redis-rate-limiter:openapi-statuses';
/** The static method the swagger CLI plugin adds to a class: it adds success responses itself. */
const PLUGIN_METADATA_FACTORY = '_OPENAPI_METADATA_FACTORY';

type Responses = Record<string, unknown>;

/**
 * Writes the 429 and 503 the guard answers into the OpenAPI metadata of `@nestjs/swagger`,
 * on each limited controller handler: what `@ApiTooManyRequestsResponse` and
 * `@ApiServiceUnavailableResponse` would say if the app wrote them by hand. Statuses the
 * handler or its controller documents are left alone.
 */
export class OpenApiResponses {
  constructor(
    private readonly options: Pick<
      ResolvedRateLimitOptions,
      | 'guard'
      | 'dryRun'
      | 'contextTypes'
      | 'headers'
      | 'limitedResponse'
      | 'unavailableResponse'
      | 'openApi'
    >,
    private readonly swagger: SwaggerDecorators,
  ) {}

  /** Documents (or, no longer limited, undocuments) `method` of `owner`. */
  document(owner: RouteTarget, method: string, plan: RoutePlan): void {
    const prototype = (owner as unknown as { prototype: Record<string, unknown> }).prototype;
    const handler = prototype[method];
    if (
      typeof handler !== 'function' ||
      Reflect.getMetadata(METHOD_METADATA, handler) === undefined
    ) {
      return;
    }
    const key = this.swagger.DECORATORS.API_RESPONSE;
    const before = this.withoutOurs(key, handler);
    const wanted = this.responsesOf(plan);
    const declared = { ...(Reflect.getMetadata(key, owner) as Responses), ...before };
    const added = Object.keys(wanted).filter((status) => !(status in declared));
    if (added.length === 0) return;
    // Swagger gives a handler its default success response only while it documents none:
    // one that had none gets that response written beside ours (the CLI plugin adds its own).
    const success = String(successStatus(handler));
    if (before === undefined && !hasPluginMetadata(owner) && !(success in declared)) {
      wanted[success] = { description: '' };
      added.push(success);
    }
    const descriptor = { value: handler };
    for (const status of added) {
      this.swagger.ApiResponse({ status: Number(status), ...(wanted[status] as object) })(
        prototype,
        method,
        descriptor,
      );
    }
    Reflect.defineMetadata(DOCUMENTED, added, handler);
  }

  /** The handler's responses less those this module wrote before (another app's). */
  private withoutOurs(key: string, handler: object): Responses | undefined {
    const responses = Reflect.getMetadata(key, handler) as Responses | undefined;
    const ours = Reflect.getMetadata(DOCUMENTED, handler) as string[] | undefined;
    if (!ours || !responses) return responses;
    const rest = Object.fromEntries(
      Object.entries(responses).filter(([status]) => !ours.includes(status)),
    );
    Reflect.deleteMetadata(DOCUMENTED, handler);
    if (Object.keys(rest).length === 0) {
      Reflect.deleteMetadata(key, handler);
      return undefined;
    }
    Reflect.defineMetadata(key, rest, handler);
    return rest;
  }

  /** The 429 (and 503) of a route whose plan can deny it over HTTP; none for the others. */
  private responsesOf(plan: RoutePlan): Responses {
    const { guard, dryRun, contextTypes, openApi } = this.options;
    const enforced = plan.policies.some((policy) => !policy.shadow);
    const guarded = guard || plan.guardedExplicitly;
    if (!enforced || !guarded || dryRun || !contextTypes.includes('http') || !openApi) return {};
    // The examples name a policy the route enforces, as its 429s would.
    const policy = JSON.stringify(plan.policies.find(({ shadow }) => !shadow)!.name);
    const responses: Responses = {
      [HttpStatus.TOO_MANY_REQUESTS]: {
        description:
          'Rate limit exceeded: a policy of this route denied the request. Retry after ' +
          'Retry-After seconds.',
        headers: this.limitedHeaders(plan, policy),
        ...this.body(
          this.options.limitedResponse,
          openApi.limitedSchema,
          HttpStatus.TOO_MANY_REQUESTS,
          'Too Many Requests',
          `Rate limit exceeded (${policy}); retry in 30 s.`,
        ),
      },
    };
    if (plan.failureMode === 'closed') {
      responses[HttpStatus.SERVICE_UNAVAILABLE] = {
        description:
          "The rate limit store is unavailable and this route's failure mode is 'closed'. " +
          'Retry after Retry-After seconds.',
        headers: { 'Retry-After': RETRY_AFTER },
        ...this.body(
          this.options.unavailableResponse,
          openApi.unavailableSchema,
          HttpStatus.SERVICE_UNAVAILABLE,
          'Service Unavailable',
          'Rate limiting is unavailable, please retry later.',
        ),
      };
    }
    return responses;
  }

  /** The headers a 429 carries under the `headers` option, with the route's policy as example. */
  private limitedHeaders(plan: RoutePlan, policy: string): Responses {
    const style = this.options.headers;
    const headers: Responses = {};
    if (style === 'ietf' || style === 'both') {
      headers['RateLimit'] = {
        description:
          'Per policy, what is left: "name";r=remaining;t=seconds until it resets ' +
          '(draft-ietf-httpapi-ratelimit-headers).',
        schema: { type: 'string', example: `${policy};r=0;t=30` },
      };
      headers['RateLimit-Policy'] = {
        description: 'The policies of this route: "name";q=quota;w=window in seconds.',
        schema: { type: 'string', example: plan.policyHeader || `${policy};q=100;w=60` },
      };
    }
    if (style === 'legacy' || style === 'both') {
      headers['X-RateLimit-Limit'] = legacyHeader('The quota of the tightest policy.');
      headers['X-RateLimit-Remaining'] = legacyHeader('What is left of it: 0 here.');
      headers['X-RateLimit-Reset'] = legacyHeader('Seconds until it resets.');
    }
    headers['Retry-After'] = RETRY_AFTER;
    return headers;
  }

  /**
   * The body: the default one (a message option only changes its text), or the schema the
   * `openApi` option names for a function's, or none where it names none.
   */
  private body(
    option: RateLimitResponseOption | undefined,
    schema: RateLimitOpenApiSchema | undefined,
    status: number,
    error: string,
    message: string,
  ): Responses {
    if (typeof option === 'function') {
      if (schema === undefined) return {};
      return typeof schema === 'function' ? { type: schema } : { schema };
    }
    return { schema: errorBody(status, error, option ?? message) };
  }
}

const RETRY_AFTER = {
  description: 'Whole seconds to wait before retrying.',
  schema: { type: 'integer', minimum: 1, example: 30 },
};

const legacyHeader = (description: string) => ({
  description,
  schema: { type: 'integer', minimum: 0 },
});

/** RateLimitErrorBody as a Schema Object. */
const errorBody = (status: number, error: string, message: string) => ({
  type: 'object',
  required: ['statusCode', 'error', 'message', 'retryAfter'],
  properties: {
    statusCode: { type: 'integer', enum: [status] },
    error: { type: 'string', example: error },
    message: { type: 'string', example: message },
    retryAfter: {
      type: 'integer',
      minimum: 1,
      description: 'Whole seconds, equal to the Retry-After header.',
      example: 30,
    },
  },
});

/** The status swagger documents for a handler that names none: @HttpCode's, else 201 for POST, else 200. */
function successStatus(handler: object): number {
  const code = Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined;
  if (code) return code;
  return Reflect.getMetadata(METHOD_METADATA, handler) === RequestMethod.POST
    ? HttpStatus.CREATED
    : HttpStatus.OK;
}

function hasPluginMetadata(owner: RouteTarget): boolean {
  for (
    let type = owner as unknown;
    typeof type === 'function';
    type = Object.getPrototypeOf(type)
  ) {
    if (Object.prototype.hasOwnProperty.call(type, PLUGIN_METADATA_FACTORY)) return true;
  }
  return false;
}

/**
 * Documents every controller handler's 429 and 503 if `@nestjs/swagger` is there. Runs as
 * the module's providers are made, before any document is built (apps build it before
 * `app.init()`). A mistake in a route's policies is left for start-up to report (planAll).
 */
export async function documentRateLimitResponses(
  options: ConstructorParameters<typeof OpenApiResponses>[0],
  planner: Pick<RoutePlanner, 'controllerPlans'>,
  logger: Logger,
): Promise<void> {
  if (options.openApi === false) return;
  const swagger = await loadSwagger(logger);
  if (!swagger) return;
  let plans: ReturnType<RoutePlanner['controllerPlans']>;
  try {
    plans = planner.controllerPlans();
  } catch {
    return;
  }
  const responses = new OpenApiResponses(options, swagger);
  for (const { owner, method, plan } of plans) responses.document(owner, method, plan);
}
