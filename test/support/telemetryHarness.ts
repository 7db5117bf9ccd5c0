import { InMemoryLogRecordExporter, SimpleLogRecordProcessor, type ReadableLogRecord } from "@opentelemetry/sdk-logs";
import {
  AggregationTemporality,
  DataPointType,
  InMemoryMetricExporter,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { Telemetry } from "../../src/app/telemetry/telemetry";
import type { LogLevel } from "../../src/app/telemetry/telemetrySettings";

/** One exported metric point: counters summed over exports, gauges' last value, histograms' count and sum. */
export interface MetricPoint {
  name: string;
  attributes: Record<string, unknown>;
  value: number;
  count?: number;
}

/**
 * The app's {@link Telemetry} with OpenTelemetry's in-memory exporters: every log record as the SDK hands it to an
 * exporter, and the metrics as deltas (as the Azure Monitor exporter asks for them), read after a flush.
 */
export function recordingTelemetry(options: { minLevel?: LogLevel } = {}) {
  const logs = new InMemoryLogRecordExporter();
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.DELTA);
  const telemetry = new Telemetry({
    logProcessors: [new SimpleLogRecordProcessor({ exporter: logs })],
    // Exports only when flushed: the tests read the metrics at a point they choose.
    metricReaders: [new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })],
    serviceName: "func-test",
    instanceId: "test-instance",
    ...(options.minLevel === undefined ? {} : { minLevel: options.minLevel }),
  });
  const records = async (): Promise<ReadableLogRecord[]> => {
    await telemetry.forceFlush();
    return logs.getFinishedLogRecords();
  };
  const metrics = async (): Promise<MetricPoint[]> => {
    await telemetry.forceFlush();
    const points: MetricPoint[] = [];
    for (const exported of metricExporter.getMetrics())
      for (const scope of exported.scopeMetrics)
        for (const metric of scope.metrics)
          for (const point of metric.dataPoints) {
            const name = metric.descriptor.name;
            const attributes = { ...point.attributes };
            const same = points.find(
              (known) => known.name === name && JSON.stringify(known.attributes) === JSON.stringify(attributes),
            );
            if (metric.dataPointType === DataPointType.HISTOGRAM) {
              const histogram = point.value as { sum?: number; count: number };
              if (same === undefined)
                points.push({ name, attributes, value: histogram.sum ?? 0, count: histogram.count });
              else {
                same.value += histogram.sum ?? 0;
                same.count = (same.count ?? 0) + histogram.count;
              }
            } else if (metric.dataPointType === DataPointType.GAUGE) {
              if (same === undefined) points.push({ name, attributes, value: point.value as number });
              else same.value = point.value as number;
            } else if (same === undefined) points.push({ name, attributes, value: point.value as number });
            else same.value += point.value as number;
          }
    metricExporter.reset();
    return points;
  };
  return { telemetry, records, metrics };
}
