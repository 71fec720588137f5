import type { ArgumentsHost, HttpException } from '@nestjs/common';

/** The error code GraphQL, WebSocket and microservice clients receive with a denial. */
export const RATE_LIMITED = 'RATE_LIMITED';
/** The error code they receive when the store fails under `failureMode: 'closed'`. */
export const RATE_LIMIT_UNAVAILABLE = 'RATE_LIMIT_UNAVAILABLE';

/**
 * These are read by duck typing so that none of the transports' packages is loaded unless
 * the app uses it; a context's `getType()` names the transport.
 */
type Addressed = { remoteAddress?: string };
type HttpRequest = { ip?: string; socket?: Addressed };
/** The object in a resolver's third argument: Apollo's `{ req }` (or the app's own), Mercurius' `{ reply }`. */
type GraphQLContext = { req?: HttpRequest & { res?: unknown }; reply?: { request?: HttpRequest } };
/** A socket.io socket (`conn`) or a `ws` WebSocket (`_socket`). */
type WsClient = { conn?: Addressed; _socket?: Addressed };
/** A TCP microservice's context (`TcpContext`). */
type RpcContext = { getSocketRef?: () => { netSocket?: Addressed } | undefined };

const graphqlContext = (context: ArgumentsHost) =>
  (context.getArgByIndex<GraphQLContext | undefined>(2) ?? {}) as GraphQLContext;

/**
 * The request the client sent: the HTTP request for HTTP and GraphQL, the client's socket for
 * WebSockets, the transport context (e.g. `TcpContext`) for microservices.
 */
export function requestOf(context: ArgumentsHost): unknown {
  switch (context.getType<string>()) {
    // HTTP arguments are (request, response, next). Read directly: switchToHttp() assigns three
    // new closures to the context on every call, and this runs on every request.
    case 'http':
      return context.getArgByIndex(0);
    case 'graphql': {
      const { req, reply } = graphqlContext(context);
      return req ?? reply?.request;
    }
    case 'ws':
      return context.switchToWs().getClient();
    case 'rpc':
      return context.switchToRpc().getContext();
    default:
      return undefined;
  }
}

/**
 * Where headers go: the HTTP response, or for GraphQL the response of the HTTP request that
 * carried the operation (Express' `req.res`, a `res` or `reply` in the GraphQL context).
 * WebSocket and microservice messages have none.
 */
export function responseOf(context: ArgumentsHost): unknown {
  switch (context.getType<string>()) {
    case 'http':
      return context.getArgByIndex(1);
    case 'graphql': {
      const graphql = graphqlContext(context) as GraphQLContext & { res?: unknown };
      return graphql.res ?? graphql.reply ?? graphql.req?.res;
    }
    default:
      return undefined;
  }
}

/**
 * The client's address as the transport sees it: the HTTP adapter's `ip` (under its
 * trust-proxy setting), else the peer of the socket.
 */
export function clientAddress(context: ArgumentsHost): string | undefined {
  const type = context.getType<string>();
  if (type === 'ws') {
    const client = requestOf(context) as WsClient | undefined;
    return (client?.conn ?? client?._socket)?.remoteAddress;
  }
  if (type === 'rpc') {
    const rpc = requestOf(context) as RpcContext | undefined;
    return rpc?.getSocketRef?.()?.netSocket?.remoteAddress;
  }
  const request = requestOf(context) as HttpRequest | undefined;
  return request?.ip ?? request?.socket?.remoteAddress;
}

const CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  429: RATE_LIMITED,
  503: RATE_LIMIT_UNAVAILABLE,
};

type Class = new (...args: never[]) => unknown;
const loaded = new Map<string, Promise<Class>>();

/** Loads a class of a transport's package from the app's own copy of it, once. */
export function optionalExport(specifier: string, name: string): Promise<Class> {
  let found = loaded.get(name);
  if (!found) {
    found = import(specifier).then((module: Record<string, Class>) => module[name]);
    loaded.set(name, found);
  }
  return found;
}

/**
 * A 429 or 503 of the limiter in the idiom of the context's transport: a GraphQL error
 * with `extensions.code` and `retryAfter`, a `WsException` or an `RpcException` carrying
 * `{ status: 'error', code, message, retryAfter }`. Other exceptions (a malformed cost's
 * 400) carry their HTTP status instead of `retryAfter`. HTTP gets the exception itself.
 */
export async function transportError(
  context: ArgumentsHost,
  exception: HttpException & { retryAfter?: number },
): Promise<Error> {
  const status = exception.getStatus();
  const code = CODES[status] ?? `HTTP_${status}`;
  const details =
    exception.retryAfter === undefined ? { status } : { retryAfter: exception.retryAfter };
  switch (context.getType<string>()) {
    case 'graphql': {
      const GraphQLError = (await optionalExport('graphql', 'GraphQLError')) as new (
        message: string,
        options: { extensions: object },
      ) => Error;
      return new GraphQLError(exception.message, { extensions: { code, ...details } });
    }
    case 'ws':
    case 'rpc': {
      const [specifier, name] =
        context.getType() === 'ws'
          ? ['@nestjs/websockets', 'WsException']
          : ['@nestjs/microservices', 'RpcException'];
      const TransportException = (await optionalExport(specifier, name)) as new (
        error: object,
      ) => Error;
      return new TransportException({
        status: 'error',
        code,
        message: exception.message,
        ...details,
      });
    }
    default:
      return exception;
  }
}
