import { ROOT_CONTEXT, defaultTextMapGetter, type Context } from "@opentelemetry/api";
import type { LogAttributes, Logger as OtelLogger, SeverityNumber } from "@opentelemetry/api-logs";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LoggerProvider, type LogRecordProcessor } from "@opentelemetry/sdk-logs";
import { MeterProvider, type IMetricReader } from "@opentelemetry/sdk-metrics";
import type { MessageQueue } from "../../coordination/ports/ports.js";
import type { WorkOutcome } from "../../coordination/worker/worker.js";
import { readPoolViews } from "../../coordination/state/grantLedger.js";
import type { StateStore } from "../../library/fencing/StateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { Logger } from "../../library/util/logger.js";
import type { Sink } from "../context.js";
import { formatEventLine, type AppEvent } from "../events.js";
import { CoordinatorMetrics, type QueueRole } from "./metrics.js";
import { SEVERITIES, eventRecord, logRecord, type RecordParts } from "./records.js";
import type { LogLevel } from "./telemetrySettings.js";

/** The instrumentation scope of the app's records and metrics. */
export const TELEMETRY_SCOPE = "azure-leader-coordinator";

/** What an invocation tells about itself (from the Functions `InvocationContext`). */
export interface InvocationInfo {
  functionName: string;
  invocationId: string;
  /** W3C `traceparent` of the invocation (`InvocationContext.traceContext.traceParent`): records join its operation. */
  traceParent?: string;
  traceState?: string;
}

/** The parts telemetry exports through: processors of log records and readers of metrics, each with its exporter. */
export interface TelemetryParts {
  logProcessors: LogRecordProcessor[];
  metricReaders: IMetricReader[];
  /** Log records below this level are not emitted. @default "information" */
  minLevel?: LogLevel;
  /** `service.name` (cloud_RoleName). */
  serviceName: string;
  /** `service.instance.id` (cloud_RoleInstance): the app's instance id. */
  instanceId: string;
}

/** The queues whose depth {@link Telemetry.sampleQueues} reads, by role, and the state store (the grant ledger). */
export type SampledQueues = Readonly<
  Record<"workQueue" | "resultsQueue" | "workPoisonQueue" | "resultsPoisonQueue", MessageQueue> & {
    state: StateStore;
  }
>;

const propagator = new W3CTraceContextPropagator();

/**
 * The app's OpenTelemetry: log records of its events and log lines, and its metrics, through the processors and
 * readers it was built with. {@link Telemetry.off} exports nothing and changes nothing. One per process (the providers'
 * exporters batch for the whole process); each invocation gets its own sink from {@link Telemetry.instrument}.
 */
export class Telemetry {
  /** No export: {@link instrument} hands back the sink it is given. */
  static readonly off = new Telemetry(undefined);

  private readonly loggerProvider: LoggerProvider | undefined;
  private readonly meterProvider: MeterProvider | undefined;
  private readonly logger: OtelLogger | undefined;
  private readonly metrics: CoordinatorMetrics | undefined;
  private readonly minSeverity: SeverityNumber;

  constructor(parts: TelemetryParts | undefined) {
    this.minSeverity = SEVERITIES[parts?.minLevel ?? "information"].number;
    if (parts === undefined) return;
    const resource = resourceFromAttributes({
      "service.name": parts.serviceName,
      "service.instance.id": parts.instanceId,
    });
    this.loggerProvider = new LoggerProvider({ resource, processors: parts.logProcessors });
    this.meterProvider = new MeterProvider({ resource, readers: parts.metricReaders });
    this.logger = this.loggerProvider.getLogger(TELEMETRY_SCOPE);
    this.metrics = new CoordinatorMetrics(this.meterProvider.getMeter(TELEMETRY_SCOPE));
  }

  /** Whether anything is exported. */
  get exporting(): boolean {
    return this.logger !== undefined;
  }

  /**
   * The sink an invocation's operations use: each event becomes a log record (a custom event whose attributes are its
   * fields) and feeds the metrics; each log line becomes a record whose attributes are the logger's properties. Every
   * record carries the invocation's id and function name, and joins its trace (operation_Id). The invocation's own
   * log (`inner`) still gets every line, at debug, so the local host, `func start` and the log stream keep showing
   * them while Application Insights, whose host.json level is Information, gets each only once, as a record.
   * Without export, `inner` itself.
   */
  instrument(inner: Sink, invocation: InvocationInfo): Sink {
    const { logger, metrics } = this;
    if (logger === undefined || metrics === undefined) return inner;
    const context = traceContextOf(invocation);
    const attributes: LogAttributes = {
      InvocationId: invocation.invocationId,
      // The Azure Monitor exporter reads it as operation_Name; it is not kept as a custom dimension.
      "ai.operation.name": invocation.functionName,
    };
    const emit = (record: RecordParts): void => {
      if (record.severityNumber >= this.minSeverity) logger.emit({ ...record, context });
    };
    const log =
      (level: LogLevel): Logger["info"] =>
      (message, properties) => {
        emit(logRecord(level, message, properties, attributes));
        inner.logger.verbose(message, properties);
      };
    let started: { atMs: number; trigger: string } | undefined;
    return {
      logger: { verbose: log("debug"), info: log("information"), warn: log("warning"), error: log("error") },
      emit: (event: AppEvent) => {
        if (event.type === "step-started") started = { atMs: event.atMs, trigger: event.trigger };
        metrics.recordEvent(event, started);
        if (event.type === "step-completed" || event.type === "step-aborted") started = undefined;
        emit(eventRecord(event, attributes));
        inner.logger.verbose(formatEventLine(event));
      },
    };
  }

  /** Counts a worker's unit: its items done and failed, by task kind. */
  recordWork(outcome: WorkOutcome): void {
    this.metrics?.recordWork(outcome);
  }

  /**
   * Samples the depth of the work, results and poison queues, the fold lag (the age of the oldest result on the
   * results queue) and each limited pool's use (the grant ledger): six storage requests. The timer calls it once a
   * tick, whoever leads, so the figures keep coming when no step runs. A failure is logged to `sink`, never thrown.
   */
  async sampleQueues(queues: SampledQueues, sink: Sink, options: Abortable = {}): Promise<void> {
    const { metrics } = this;
    if (metrics === undefined) return;
    const sampled: [QueueRole, MessageQueue][] = [
      ["work", queues.workQueue],
      ["results", queues.resultsQueue],
      ["work-poison", queues.workPoisonQueue],
      ["results-poison", queues.resultsPoisonQueue],
    ];
    try {
      const [depths, oldest, pools] = await Promise.all([
        Promise.all(sampled.map(([, queue]) => queue.approximateCount(options))),
        queues.resultsQueue.peek(1, options),
        readPoolViews(queues.state, Date.now(), options),
      ]);
      for (const [index, [role, queue]] of sampled.entries())
        metrics.recordQueueDepth(role, queue.name, depths[index] ?? 0);
      metrics.recordFoldLag(oldest[0]?.queuedMs ?? 0);
      metrics.recordPools(pools);
    } catch (error) {
      sink.logger.warn(
        `Telemetry could not sample the queue depths: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }

  /** Exports what is buffered (records, and the metrics so far). */
  async forceFlush(): Promise<void> {
    await Promise.all([this.loggerProvider?.forceFlush(), this.meterProvider?.forceFlush()]);
  }

  /** Exports what is buffered and stops (the app-terminate hook calls it). */
  async shutdown(): Promise<void> {
    await Promise.all([this.loggerProvider?.shutdown(), this.meterProvider?.shutdown()]);
  }
}

/** The invocation's trace as an OpenTelemetry context (the root context when it has none or a malformed one). */
function traceContextOf(invocation: InvocationInfo): Context {
  if (invocation.traceParent === undefined || invocation.traceParent === "") return ROOT_CONTEXT;
  const carrier: Record<string, string> = { traceparent: invocation.traceParent };
  if (invocation.traceState !== undefined && invocation.traceState !== "") carrier.tracestate = invocation.traceState;
  return propagator.extract(ROOT_CONTEXT, carrier, defaultTextMapGetter);
}
