import type { ExecutionContext, Logger } from '@nestjs/common';
import type { KeyResolver } from '../interfaces/rate-limit-policy.interface.js';
import type { ResolvedRateLimitOptions } from '../config/resolved-options.js';
import { clientIp } from './client-ip.js';
import { requestOf } from './transports.js';

/** What the guard reads of an Express or Fastify request, by duck typing. */
type HttpRequest = {
  headers?: Record<string, unknown>;
  /** Express: the app, whose settings hold 'trust proxy'. */
  app?: { get?: (setting: string) => unknown };
  /** Fastify: the server instance, whose options hold trustProxy. */
  server?: object;
};

type Adapter = 'express' | 'fastify';
interface TrustSetting {
  readonly adapter: Adapter;
  readonly value: unknown;
}

/**
 * Fastify keeps its factory options under a symbol (`kOptions`, described 'fastify.options')
 * on the root instance, which encapsulated instances inherit; it has no public getter for
 * trustProxy.
 */
function fastifyTrustProxy(server: object): TrustSetting | undefined {
  for (let layer: object | null = server; layer; layer = Object.getPrototypeOf(layer) as object) {
    const symbol = Object.getOwnPropertySymbols(layer).find(
      (own) => own.description === 'fastify.options',
    );
    if (symbol === undefined) continue;
    const options = (layer as Record<symbol, { trustProxy?: unknown } | undefined>)[symbol];
    return { adapter: 'fastify', value: options?.trustProxy };
  }
  return undefined;
}

/** The adapter's trust-proxy setting as the request's app holds it; undefined if unknown. */
function trustSetting(request: HttpRequest): TrustSetting | undefined {
  if (typeof request.app?.get === 'function') {
    return { adapter: 'express', value: request.app.get('trust proxy') };
  }
  return request.server !== undefined ? fastifyTrustProxy(request.server) : undefined;
}

/** Setting `false` (both adapters' default) or a hop count of 0 trusts no proxy. */
const trustsNone = (value: unknown) => value === undefined || value === false || value === 0;

const HOW_TO_TRUST: Record<Adapter, string> = {
  express: "app.set('trust proxy', ...) with your proxies' hop count or addresses",
  fastify: "new FastifyAdapter({ trustProxy: ... }) with your proxies' addresses",
};

/**
 * The misconfigurations of the client address the default `keyBy` rests on, each warned
 * once, at the first request that shows it: a forwarding header while the HTTP adapter
 * trusts no proxy (behind a proxy every client is then the proxy, one budget for all), and
 * a setting that trusts every hop (any client then picks its own address, a fresh budget
 * per request). The setting is read at the first HTTP request; once nothing more can show,
 * `inspect` answers at once.
 */
export class ProxyTrustCheck {
  /** Undefined until the first HTTP request; 'done' once nothing more is to be warned. */
  private state: 'done' | Adapter | undefined;

  constructor(private readonly logger: Logger) {}

  /** Warns what this request shows; true once nothing more can show. */
  inspect(context: ExecutionContext): boolean {
    if (this.state === 'done') return true;
    const type = context.getType<string>();
    if (type !== 'http' && type !== 'graphql') return false;
    const request = requestOf(context) as HttpRequest | undefined;
    if (request === undefined) return false;
    if (this.state === undefined) {
      const setting = trustSetting(request);
      if (setting === undefined || !trustsNone(setting.value)) {
        if (setting?.value === true) this.warnTrustsEveryHop(setting.adapter);
        this.state = 'done';
        return true;
      }
      this.state = setting.adapter;
    }
    const headers = request.headers ?? {};
    const header =
      headers['x-forwarded-for'] !== undefined
        ? 'X-Forwarded-For'
        : headers.forwarded !== undefined
          ? 'Forwarded'
          : undefined;
    if (header === undefined) return false;
    this.logger.warn(
      `A request came with ${header} while the HTTP adapter trusts no proxy: requests are ` +
        "keyed by the address of their sender, so behind a proxy every client shares the proxy's " +
        `budget. Behind a proxy, trust it: ${HOW_TO_TRUST[this.state]}. Without one, a ` +
        'client sent the header and it is rightly ignored. (Warned once.)',
    );
    this.state = 'done';
    return true;
  }

  private warnTrustsEveryHop(adapter: Adapter): void {
    this.logger.warn(
      'The HTTP adapter trusts every proxy (trust proxy: true): any client can name its own ' +
        'address in X-Forwarded-For and get a fresh budget with each request. Trust only your ' +
        `proxies: ${HOW_TO_TRUST[adapter]}. (Warned once.)`,
    );
  }
}

/** One check per module instance, shared by every guard built on its options. */
const checks = new WeakMap<object, ProxyTrustCheck>();

/**
 * The default `keyBy`: `clientIp` at the module's `ipv6Subnet`, checking the adapter's
 * trust-proxy setting until nothing more can show, then clientIp alone.
 */
export function clientIpKeyBy(
  options: Pick<ResolvedRateLimitOptions, 'ipv6Subnet'>,
  logger: Logger,
): KeyResolver {
  const { ipv6Subnet } = options;
  let check = checks.get(options);
  if (check === undefined) checks.set(options, (check = new ProxyTrustCheck(logger)));
  const keyOf = (context: ExecutionContext) => clientIp(context, ipv6Subnet);
  let current = (context: ExecutionContext) => {
    if (check.inspect(context)) current = keyOf;
    return keyOf(context);
  };
  return (context) => current(context);
}
