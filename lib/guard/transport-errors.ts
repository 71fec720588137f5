import type { ArgumentsHost, HttpException } from '@nestjs/common';

/** The error code GraphQL, WebSocket and microservice clients receive with a denial. */
export const RATE_LIMITED = 'RATE_LIMITED';
/** The error code they receive when the store fails under `failureMode: 'closed'`. */
export const RATE_LIMIT_UNAVAILABLE = 'RATE_LIMIT_UNAVAILABLE';

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
  const message = publicMessage(exception);
  const details =
    exception.retryAfter === undefined ? { status } : { retryAfter: exception.retryAfter };
  switch (context.getType<string>()) {
    case 'graphql': {
      const GraphQLError = (await optionalExport('graphql', 'GraphQLError')) as new (
        message: string,
        options: { extensions: object },
      ) => Error;
      return new GraphQLError(message, { extensions: { code, ...details } });
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
        message,
        ...details,
      });
    }
    default:
      return exception;
  }
}

/**
 * What the HTTP body would tell the client: its message, where the exception's own may
 * name the app's internals (a 500's route and policy), else the exception's.
 */
function publicMessage(exception: HttpException): string {
  const body = exception.getResponse();
  const message = typeof body === 'object' ? (body as { message?: unknown }).message : body;
  return typeof message === 'string' ? message : exception.message;
}
