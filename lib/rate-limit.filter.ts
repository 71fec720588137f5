import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { from, mergeMap, throwError } from 'rxjs';
import {
  RateLimitExceededException,
  RateLimitUnavailableException,
} from './rate-limit.exceptions.js';
import { optionalExport, transportError } from './guard/transport-errors.js';
import { responseOf } from './guard/transports.js';

type TransportException = Error & { getError(): unknown };

/**
 * Renders 429 and 503 with Retry-After and the JSON body, on Express and Fastify alike.
 * Thrown from a GraphQL resolver, a gateway or a message handler (after a `RateLimiter`
 * call, say), they reach the client as the guard's own denials do there.
 */
@Catch(RateLimitExceededException, RateLimitUnavailableException)
export class RateLimitExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    exception: RateLimitExceededException | RateLimitUnavailableException,
    host: ArgumentsHost,
  ): unknown {
    const type = host.getType<string>();
    const response = responseOf(host);
    if (response) {
      this.adapterHost.httpAdapter.setHeader(response, 'Retry-After', String(exception.retryAfter));
    }
    if (type === 'http') {
      this.adapterHost.httpAdapter.reply(response, exception.getResponse(), exception.getStatus());
      return undefined;
    }
    const error = transportError(host, exception);
    // Each transport takes a filter's answer its own way: microservices an Observable that
    // errors, WebSockets nothing (the filter tells the client), GraphQL the resolver's result.
    if (type === 'rpc') {
      return from(error).pipe(
        mergeMap((rpc) => throwError(() => (rpc as TransportException).getError())),
      );
    }
    if (type === 'ws') {
      void Promise.all([error, optionalExport('@nestjs/websockets', 'BaseWsExceptionFilter')]).then(
        ([ws, Filter]) => new (Filter as new () => ExceptionFilter)().catch(ws, host),
      );
      return undefined;
    }
    return error;
  }
}
