import { RateLimitConfigError } from './rate-limit-config.error.js';
import { RateLimitMetrics } from '../observability/rate-limit-metrics.js';
import type {
  RateLimitMeterProvider,
  RateLimitMetricsOptions,
} from '../interfaces/rate-limit-metrics.interface.js';

const DEFAULT_NEAR_LIMIT_SHARE = 0.2;

/**
 * The instruments the `metrics` option asks for, or undefined when it is off; `global` is
 * the provider `globalMeterProvider` found, if asked.
 */
export function createMetrics(
  option: unknown,
  global: RateLimitMeterProvider | undefined,
): RateLimitMetrics | undefined {
  const fail = (problem: string) =>
    new RateLimitConfigError(`Invalid RateLimitModule option metrics: ${problem}`);
  if (option === undefined || option === false) return undefined;
  if (option !== true && !isObject(option)) {
    throw fail(
      `must be true, false or { meterProvider?, nearLimitShare? } (got ${String(option)})`,
    );
  }
  const { meterProvider = global, nearLimitShare = DEFAULT_NEAR_LIMIT_SHARE } =
    option === true ? {} : (option as RateLimitMetricsOptions);
  if (typeof nearLimitShare !== 'number' || !(nearLimitShare >= 0 && nearLimitShare <= 1)) {
    throw fail(`nearLimitShare must be a number from 0 to 1 (got ${String(nearLimitShare)})`);
  }
  if (!isObject(meterProvider) || typeof meterProvider.getMeter !== 'function') {
    throw fail(
      meterProvider === undefined
        ? 'needs a meterProvider, or RateLimitModule to find the global one'
        : 'meterProvider must be an OpenTelemetry MeterProvider (with getMeter)',
    );
  }
  return new RateLimitMetrics(meterProvider as RateLimitMeterProvider, nearLimitShare);
}

/**
 * The global MeterProvider, when the `metrics` option asks for it: `@opentelemetry/api`
 * is loaded only then.
 */
export async function globalMeterProvider(
  option: boolean | RateLimitMetricsOptions | undefined,
): Promise<RateLimitMeterProvider | undefined> {
  const wanted = option === true || (isObject(option) && option.meterProvider === undefined);
  if (!wanted) return undefined;
  try {
    const api = (await import('@opentelemetry/api')) as {
      metrics: { getMeterProvider(): RateLimitMeterProvider };
    };
    return api.metrics.getMeterProvider();
  } catch (error) {
    throw new RateLimitConfigError(
      'Invalid RateLimitModule option metrics: without a meterProvider it needs the ' +
        `@opentelemetry/api package (${error instanceof Error ? error.message : String(error)})`,
    );
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null;
