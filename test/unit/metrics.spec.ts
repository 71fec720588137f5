import { CircuitOpenError } from '../../lib/circuit-breaker.js';
import { DeadlineExceededError } from '../../lib/deadline.js';
import { createMetrics, failureKind } from '../../lib/metrics.js';
import { RateLimitConfigError } from '../../lib/rate-limit-config.error.js';

describe('failureKind', () => {
  const withCode = (code: string) => Object.assign(new Error(`connect ${code}`), { code });

  it.each([
    [new DeadlineExceededError('no answer within 100 ms (store silent)'), 'timeout'],
    [new CircuitOpenError('circuit breaker open'), 'circuit_open'],
    [withCode('ECONNREFUSED'), 'disconnected'],
    [withCode('ECONNRESET'), 'disconnected'],
    [withCode('EPIPE'), 'disconnected'],
    [new Error('Redis connection is reconnecting'), 'disconnected'],
    [new Error('Connection is closed.'), 'disconnected'],
    [new Error("Stream isn't writeable and enableOfflineQueue options is false"), 'disconnected'],
    [new Error('Reached the max retries per request limit (which is 0).'), 'disconnected'],
    [new Error('NOPERM User default has no permissions to run the evalsha command'), 'error'],
    [new Error('BUSY Redis is busy running a script'), 'error'],
    ['a string thrown', 'error'],
    [undefined, 'error'],
  ])('%p is %s', (error, kind) => {
    expect(failureKind(error)).toBe(kind);
  });
});

describe('createMetrics', () => {
  const meterProvider = {
    getMeter: () => ({
      createCounter: () => ({ add: () => undefined }),
      createHistogram: () => ({ record: () => undefined }),
      createObservableCounter: () => ({ addCallback: () => undefined }),
    }),
  };

  it('is off unless asked', () => {
    expect(createMetrics(undefined, meterProvider)).toBeUndefined();
    expect(createMetrics(false, meterProvider)).toBeUndefined();
  });

  it.each([0, 0.2, 1])('takes a nearLimitShare of %p', (nearLimitShare) => {
    expect(createMetrics({ meterProvider, nearLimitShare }, undefined)).toBeDefined();
  });

  it.each([
    [{ meterProvider, nearLimitShare: -0.1 }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: NaN }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: '0.2' }, 'nearLimitShare must be a number from 0 to 1'],
    [true, 'needs a meterProvider, or RateLimitModule to find the global one'],
    [{ meterProvider: 'prometheus' }, 'meterProvider must be an OpenTelemetry MeterProvider'],
    [null, 'must be true, false or { meterProvider?, nearLimitShare? }'],
  ])('refuses %p', (option, problem) => {
    expect(() => createMetrics(option, undefined)).toThrow(RateLimitConfigError);
    expect(() => createMetrics(option, undefined)).toThrow(
      `Invalid RateLimitModule option metrics: ${problem}`,
    );
  });
});
