/** One registry per process, shared by every copy of this package whatever its build or version. */
const COPIES: unique symbol = Symbol.for('nestjs-redis-rate-limiter:copies');

const copies = ((globalThis as { [COPIES]?: Set<object> })[COPIES] ??= new Set());
copies.add({});

/**
 * Whether the process holds another copy of this package besides this one: its ESM and
 * CommonJS builds when it is both imported and required (the dual-package hazard), or two
 * installed versions. Each copy has its own classes and injection tokens, so the providers of
 * one cannot inject the other's.
 */
export function otherCopiesLoaded(): boolean {
  return copies.size > 1;
}
