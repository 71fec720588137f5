import { jest } from '@jest/globals';
import { createMetrics, globalMeterProvider } from '../../lib/config/metrics-option.js';
import { RateLimitConfigError } from '../../lib/config/rate-limit-config.error.js';

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
    [{ meterProvider, nearLimitShare: 1.5 }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: NaN }, 'nearLimitShare must be a number from 0 to 1'],
    [{ meterProvider, nearLimitShare: '0.2' }, 'nearLimitShare must be a number from 0 to 1'],
    [true, 'needs a meterProvider, or RateLimitModule to find the global one'],
    [{ meterProvider: 'prometheus' }, 'meterProvider must be an OpenTelemetry MeterProvider'],
    [{ meterProvider: {} }, 'meterProvider must be an OpenTelemetry MeterProvider'],
    [null, 'must be true, false or { meterProvider?, nearLimitShare? }'],
  ])('refuses %p', (option, problem) => {
    expect(() => createMetrics(option, undefined)).toThrow(RateLimitConfigError);
    expect(() => createMetrics(option, undefined)).toThrow(
      `Invalid RateLimitModule option metrics: ${problem}`,
    );
  });
});

describe('globalMeterProvider', () => {
  const meterProvider = { getMeter: () => ({}) as never };

  it.each([undefined, false, { meterProvider }, { meterProvider, nearLimitShare: 0.5 }])(
    'loads nothing for a metrics option of %p',
    async (option) => {
      await expect(globalMeterProvider(option)).resolves.toBeUndefined();
    },
  );

  it.each([true, {}, { nearLimitShare: 0.5 }])(
    "is the OpenTelemetry API's global provider for a metrics option of %p",
    async (option) => {
      const { metrics } = await import('@opentelemetry/api');
      await expect(globalMeterProvider(option)).resolves.toBe(metrics.getMeterProvider());
    },
  );

  it('names the package it could not load', async () => {
    jest.unstable_mockModule('@opentelemetry/api', () => {
      throw new Error("Cannot find package '@opentelemetry/api'");
    });
    try {
      const failure = globalMeterProvider(true);
      await expect(failure).rejects.toThrow(RateLimitConfigError);
      await expect(failure).rejects.toThrow(
        "Invalid RateLimitModule option metrics: without a meterProvider it needs the @opentelemetry/api package (Cannot find package '@opentelemetry/api')",
      );
    } finally {
      jest.resetModules();
    }
  });
});
