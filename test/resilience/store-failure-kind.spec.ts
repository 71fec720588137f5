import { CircuitOpenError } from '../../lib/resilience/circuit-breaker.js';
import { DeadlineExceededError } from '../../lib/resilience/deadline.js';
import { failureKind } from '../../lib/resilience/store-failure-kind.js';

describe('failureKind', () => {
  const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

  it.each([
    [new DeadlineExceededError('no answer within 100 ms (store silent)'), 'timeout'],
    [new CircuitOpenError('circuit breaker open'), 'circuit_open'],
    [withCode('ECONNREFUSED'), 'disconnected'],
    [withCode('ECONNRESET'), 'disconnected'],
    [withCode('EPIPE'), 'disconnected'],
    [withCode('ENOTFOUND'), 'disconnected'],
    [withCode('EHOSTUNREACH'), 'disconnected'],
    [withCode('ENETUNREACH'), 'disconnected'],
    [withCode('ECONNABORTED'), 'disconnected'],
    [withCode('ERR_UNKNOWN'), 'error'],
    // Only a string message is read.
    [{ message: ['Connection is closed.'] }, 'error'],
    [new Error('Redis connection is reconnecting'), 'disconnected'],
    [new Error('Connection is closed.'), 'disconnected'],
    [new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'disconnected'],
    [new Error('Reached the max retries per request limit (which is 0).'), 'disconnected'],
    // node-redis
    [new Error('Socket closed unexpectedly'), 'disconnected'],
    [new Error('The client is closed'), 'disconnected'],
    [new Error('The client is offline'), 'disconnected'],
    [new Error('NOPERM User default has no permissions to run the evalsha command'), 'error'],
    [new Error('BUSY Redis is busy running a script'), 'error'],
    ['a string thrown', 'error'],
    [undefined, 'error'],
  ])('%p is %s', (error, kind) => {
    expect(failureKind(error)).toBe(kind);
  });
});
