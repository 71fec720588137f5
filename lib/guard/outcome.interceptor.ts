import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { type Observable, finalize, tap } from 'rxjs';
import { type HandlerOutcome, takeOutcomeWaiter } from './outcome-waiters.js';

const RETURNED: HandlerOutcome = { returned: true };
/** Unsubscribed before it returned or threw (a client gone): not a success. */
const CUT_SHORT: HandlerOutcome = { thrown: new Error('the handler was cut short') };

/**
 * Tells RateLimitGuard how a GraphQL, WebSocket or microservice handler ended, for policies
 * that count by outcome (`count`); HTTP outcomes are read from the response itself.
 * `@RateLimit` adds it to the routes whose policies count by outcome; a route limited by
 * the module's `policies` option needs `@UseInterceptors(RateLimitOutcomeInterceptor)` for
 * it on those transports (without it, every admitted request stays counted).
 */
@Injectable()
export class RateLimitOutcomeInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const waiter = takeOutcomeWaiter(context.getArgs());
    if (waiter === undefined) return next.handle();
    let settled = false;
    const settle = (outcome: HandlerOutcome) => {
      if (settled) return;
      settled = true;
      waiter(outcome);
    };
    return next.handle().pipe(
      tap({ error: (thrown: unknown) => settle({ thrown }), complete: () => settle(RETURNED) }),
      finalize(() => settle(CUT_SHORT)),
    );
  }
}
