import { type ArgumentsHost, Catch, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import {
  RateLimitExceededException,
  RateLimitUnavailableException,
} from './rate-limit.exceptions.js';

/** Renders 429 and 503 with Retry-After and the JSON body, on Express and Fastify alike. */
@Catch(RateLimitExceededException, RateLimitUnavailableException)
export class RateLimitExceptionFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(
    exception: RateLimitExceededException | RateLimitUnavailableException,
    host: ArgumentsHost,
  ): void {
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    httpAdapter.setHeader(response, 'Retry-After', String(exception.retryAfter));
    httpAdapter.reply(response, exception.getResponse(), exception.getStatus());
  }
}
