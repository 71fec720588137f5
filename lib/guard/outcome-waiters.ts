/**
 * A request's outcome as the interceptor sees it on GraphQL, WebSocket and microservice
 * handlers: what the handler threw, or `returned` when it returned.
 */
export type HandlerOutcome = { readonly returned: true } | { readonly thrown: unknown };

/** Called once with the handler's outcome. */
export type OutcomeWaiter = (outcome: HandlerOutcome) => void;

/**
 * The guard's waiters by the handler call's arguments array: on the transports without an
 * HTTP response, Nest hands the guards and the interceptors of one call the same array,
 * which no other call shares. Weak: a call whose route has no interceptor forgets its waiter
 * with its arguments.
 */
const waiters = new WeakMap<object, OutcomeWaiter>();

/** The guard waits for the outcome of the handler called with `args`. */
export function awaitOutcome(args: object, waiter: OutcomeWaiter): void {
  waiters.set(args, waiter);
}

/** The waiter of the call with `args`, if its guard admitted it waiting for its outcome. */
export function takeOutcomeWaiter(args: object): OutcomeWaiter | undefined {
  const waiter = waiters.get(args);
  if (waiter) waiters.delete(args);
  return waiter;
}
