import { Controller, Get, Header, type Type } from '@nestjs/common';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { SkipRateLimit } from '../lib/index.js';

/** What the sample needs to serve its metrics: the provider for the module, the route. */
export interface PrometheusMetrics {
  readonly meterProvider: MeterProvider;
  /** GET /metrics in Prometheus' text format. */
  readonly controller: Type;
}

/**
 * An OpenTelemetry MeterProvider read by the Prometheus exporter, served by the app itself at
 * /metrics rather than on the exporter's own port, so the sandbox page can read it too.
 * Imported only when the sample runs with METRICS=1.
 */
export function prometheusMetrics(): PrometheusMetrics {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [exporter] });
  const serializer = new PrometheusSerializer();

  @Controller('metrics')
  @SkipRateLimit()
  class MetricsController {
    @Get()
    @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
    async scrape(): Promise<string> {
      const { resourceMetrics } = await exporter.collect();
      return serializer.serialize(resourceMetrics);
    }
  }
  return { meterProvider, controller: MetricsController };
}
