import { appendFile } from "node:fs/promises";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { JsonLogsSerializer, JsonMetricsSerializer } from "@opentelemetry/otlp-transformer";
import type { LogRecordExporter, ReadableLogRecord } from "@opentelemetry/sdk-logs";
import { AggregationTemporality, type PushMetricExporter, type ResourceMetrics } from "@opentelemetry/sdk-metrics";

/**
 * Telemetry to a file as OTLP/JSON lines (the format of OpenTelemetry's OTLP file exporter and the Collector's file
 * exporter: each line one `ExportLogsServiceRequest` or `ExportMetricsServiceRequest`, serialized by OpenTelemetry's
 * own serializers). For the local host and `func start`; `/dev/stderr` writes to the console. Lines are appended in
 * order; a failed write fails that export (the SDK logs it) and changes nothing else.
 */
class OtlpFileWriter {
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly path: string) {}

  write(bytes: Uint8Array | undefined, done: (result: ExportResult) => void): void {
    if (bytes === undefined) {
      done({
        code: ExportResultCode.FAILED,
        error: new Error("OpenTelemetry's OTLP/JSON serializer returned nothing"),
      });
      return;
    }
    const line = Buffer.concat([Buffer.from(bytes), Buffer.from("\n")]);
    // The chain never rejects: each write reports its own outcome, and the next waits for it.
    this.pending = this.pending
      .then(() => appendFile(this.path, line))
      .then(
        () => done({ code: ExportResultCode.SUCCESS }),
        (error: unknown) =>
          done({ code: ExportResultCode.FAILED, error: error instanceof Error ? error : new Error(String(error)) }),
      );
  }

  flush(): Promise<void> {
    return this.pending;
  }
}

/** Log records to a file, one OTLP/JSON line per batch. */
export class OtlpFileLogExporter implements LogRecordExporter {
  private readonly writer: OtlpFileWriter;
  constructor(path: string) {
    this.writer = new OtlpFileWriter(path);
  }
  export(logs: ReadableLogRecord[], resultCallback: (result: ExportResult) => void): void {
    this.writer.write(JsonLogsSerializer.serializeRequest(logs), resultCallback);
  }
  forceFlush(): Promise<void> {
    return this.writer.flush();
  }
  shutdown(): Promise<void> {
    return this.writer.flush();
  }
}

/** Metrics to a file, one OTLP/JSON line per export, as deltas (what happened in the interval), as Azure's. */
export class OtlpFileMetricExporter implements PushMetricExporter {
  private readonly writer: OtlpFileWriter;
  constructor(path: string) {
    this.writer = new OtlpFileWriter(path);
  }
  export(metrics: ResourceMetrics, resultCallback: (result: ExportResult) => void): void {
    this.writer.write(JsonMetricsSerializer.serializeRequest(metrics), resultCallback);
  }
  selectAggregationTemporality(): AggregationTemporality {
    return AggregationTemporality.DELTA;
  }
  forceFlush(): Promise<void> {
    return this.writer.flush();
  }
  shutdown(): Promise<void> {
    return this.writer.flush();
  }
}
