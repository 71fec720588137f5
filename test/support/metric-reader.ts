import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type MetricData,
} from '@opentelemetry/sdk-metrics';

/** A reader the test collects from when it wants, as a Prometheus scrape would. */
class CollectingReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/**
 * Every data point as a line: the metric's short name and its attribute values, with its
 * count (a histogram's number of recordings).
 */
async function read(reader: MetricReader): Promise<Record<string, number>> {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length > 0) throw new AggregateError(errors, 'collecting the metrics failed');
  const counts: Record<string, number> = {};
  for (const metric of resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics)) {
    const name = metric.descriptor.name.replace('rate_limiting.', '');
    for (const point of (metric as MetricData).dataPoints) {
      const line = [name, ...Object.values(point.attributes)].join(' ');
      counts[line] =
        metric.dataPointType === DataPointType.HISTOGRAM
          ? (point.value as { count: number }).count
          : (point.value as number);
    }
  }
  return counts;
}

/** An OpenTelemetry SDK meter provider, and its data points when `counts` is called. */
export function collectingMeter() {
  const reader = new CollectingReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  return { meterProvider, reader, counts: () => read(reader) };
}
