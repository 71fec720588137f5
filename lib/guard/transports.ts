import type { ArgumentsHost } from '@nestjs/common';

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
