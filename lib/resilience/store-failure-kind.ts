import { CircuitOpenError } from './circuit-breaker.js';
import { DeadlineExceededError } from './deadline.js';
import type { StoreFailureKind } from '../observability/rate-limit-metrics.js';

/** Node's codes for a connection refused, lost or never made. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
/**
 * How ioredis, node-redis (a command whose socket closed under it) and RedisStore (which
 * refuses while its client is not ready) say the connection is gone; matched by text since
 * they carry no code.
 */
const DISCONNECTED =
  /connection is (?!ready)|stream isn't writeable|max retries per request|socket closed unexpectedly|the client is (closed|offline)/i;

/** The kind of a store failure, for `error.type`. */
export function failureKind(error: unknown): StoreFailureKind {
  if (error instanceof CircuitOpenError) return 'circuit_open';
  if (error instanceof DeadlineExceededError) return 'timeout';
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && CONNECTION_CODES.has(code)) return 'disconnected';
  return typeof message === 'string' && DISCONNECTED.test(message) ? 'disconnected' : 'error';
}
