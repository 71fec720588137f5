/** The instances RateLimitModule registers as its APP_FILTER: no user's copy or subclass. */
const moduleFilters = new WeakSet<object>();
/** What to run when a module filter renders the exception (see onRenderedByModule). */
const renderWatchers = new WeakMap<object, () => void>();

/** Marks `filter` as the module's own RateLimitExceptionFilter. */
export function registerModuleFilter(filter: object): void {
  moduleFilters.add(filter);
}

/**
 * Runs `onRendered` if the module's own filter renders `exception`: then Nest chose it for
 * that exception, so no filter of the app's comes first on that route (Nest picks one filter
 * by exception class from a list fixed when the route is set up). The guard learns this way
 * where it may render its 429s itself.
 */
export function onRenderedByModule(exception: object, onRendered: () => void): void {
  renderWatchers.set(exception, onRendered);
}

/** Called by a RateLimitExceptionFilter as it renders `exception`. */
export function rendered(filter: object, exception: object): void {
  if (moduleFilters.has(filter)) renderWatchers.get(exception)?.();
}
