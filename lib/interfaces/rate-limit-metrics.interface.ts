/**
 * What the limiter needs of an OpenTelemetry `MeterProvider` (the API's or the SDK's fits).
 * Written out, so that the package's types do not name `@opentelemetry/api`, an optional peer.
 */
export interface RateLimitMeterProvider {
  getMeter(name: string, version?: string): RateLimitMeter;
}

/** An OpenTelemetry attribute set, as the limiter records them. */
export type RateLimitMetricAttributes = Readonly<Record<string, string>>;

/** The part of an OpenTelemetry `Meter` the limiter uses. */
export interface RateLimitMeter {
  createCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { add(value: number, attributes?: RateLimitMetricAttributes): void };
  createHistogram(
    name: string,
    options?: {
      description?: string;
      unit?: string;
      advice?: { explicitBucketBoundaries?: number[] };
    },
  ): { record(value: number, attributes?: RateLimitMetricAttributes): void };
  createObservableCounter(
    name: string,
    options?: { description?: string; unit?: string },
  ): { addCallback(callback: (result: ObservableResult) => void): void };
}

/** What an observable instrument's callback reports to. */
export interface ObservableResult {
  observe(value: number, attributes?: RateLimitMetricAttributes): void;
}

/** The `metrics` option in its object form. */
export interface RateLimitMetricsOptions {
  /**
   * Where the instruments come from.
   * @default the global MeterProvider of `@opentelemetry/api`, as registered when the module starts
   */
  meterProvider?: RateLimitMeterProvider;
  /**
   * An admitted request counts in `rate_limiting.near_limit_decisions` when a policy has at
   * most this share of its capacity (the limit; the burst for the buckets) left.
   * @default 0.2
   */
  nearLimitShare?: number;
}
