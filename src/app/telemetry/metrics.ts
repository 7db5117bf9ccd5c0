import type { Counter, Gauge, Histogram, Meter } from "@opentelemetry/api";
import type { WorkOutcome } from "../../coordination/worker/worker.js";
import type { PoolView } from "../../coordination/state/grantLedger.js";
import type { AppEvent, StepCompletedEvent, StepAbortedEvent } from "../events.js";

/**
 * The coordinator's metrics. Counters and histograms are sent as deltas (each export counts what happened since the
 * last: in Application Insights `customMetrics`, `sum(valueSum)` over a time bin); gauges as the last value recorded
 * in the export interval. Names follow OpenTelemetry's dotted style; units are UCUM.
 */
export const METRIC_NAMES = {
  /** Work items processed by workers, per task kind and outcome (`done`, `failed`). A redelivered unit counts again. */
  items: "coordinator.items",
  /** Duration of a coordination step, from `step-started` to its end, per outcome and trigger; seconds. */
  stepDuration: "coordinator.step.duration",
  /** Age of the oldest result on the results queue (sampled each timer tick): how far folding lags; seconds. */
  foldLag: "coordinator.fold.lag",
  /** Messages on a queue (storage's approximate count, sampled each timer tick), per queue. */
  queueDepth: "coordinator.queue.depth",
  /** The newest leadership epoch this instance saw. */
  epoch: "coordinator.epoch",
  /** Terms begun by another instance than the previous term's holder (a handover or a takeover). */
  leaderChanges: "coordinator.leader.changes",
  /** Jobs active at the end of a completed step. */
  activeJobs: "coordinator.jobs.active",
  /** Removals of ended jobs that failed (`job-removal-failed`: a blob storage will not delete), each put off. */
  removalFailures: "coordinator.retention.failures",
  /**
   * Work items that held the event loop longer than a leader in the process can go without heartbeats or renewals
   * (`item-held-event-loop`), per task kind.
   */
  itemsHeldLoop: "coordinator.items.held_loop",
  /**
   * Per limited pool (`pool`: `k:<kind>`, `k:<kind>/<key>`, `j:<job>`; sampled each timer tick): items that may be
   * running.
   */
  limitRunning: "coordinator.limit.running",
  /** Per limited pool: its concurrency limit. */
  limitConcurrency: "coordinator.limit.concurrency",
  /** Per rate-limited pool: rate permits in use (each good for one start per window), and its burst. */
  limitRatePermits: "coordinator.limit.rate_permits",
  /** Per rate-limited pool: starts reported by units whose last start fell in the last period. */
  limitStarts: "coordinator.limit.starts",
  /** Per limited pool: items of jobs that waited for it in the last minute. */
  limitWaiting: "coordinator.limit.waiting",
} as const;

/** When a step started (its step-started event's wall-clock ms) and what started it. */
export interface StepStart {
  atMs: number;
  trigger: string;
}

/** The queues whose depth is sampled, by role. */
export type QueueRole = "work" | "results" | "work-poison" | "results-poison";

/** Bucket boundaries of the step duration histogram, in seconds (a step runs up to STEP_BUDGET_MS, at most 600 s). */
const STEP_SECONDS_BOUNDARIES = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600];

/** Records the coordinator's metrics on a meter. */
export class CoordinatorMetrics {
  private readonly items: Counter;
  private readonly stepDuration: Histogram;
  private readonly foldLag: Gauge;
  private readonly queueDepth: Gauge;
  private readonly epoch: Gauge;
  private readonly leaderChanges: Counter;
  private readonly activeJobs: Gauge;
  private readonly removalFailures: Counter;
  private readonly itemsHeldLoop: Counter;
  private readonly limitGauges: Record<"running" | "concurrency" | "ratePermits" | "starts" | "waiting", Gauge>;

  constructor(meter: Meter) {
    this.items = meter.createCounter(METRIC_NAMES.items, { unit: "{item}", description: "Work items processed" });
    this.stepDuration = meter.createHistogram(METRIC_NAMES.stepDuration, {
      unit: "s",
      description: "Duration of a coordination step",
      advice: { explicitBucketBoundaries: STEP_SECONDS_BOUNDARIES },
    });
    this.foldLag = meter.createGauge(METRIC_NAMES.foldLag, {
      unit: "s",
      description: "Age of the oldest result waiting to be folded",
    });
    this.queueDepth = meter.createGauge(METRIC_NAMES.queueDepth, { unit: "{message}", description: "Queue depth" });
    this.epoch = meter.createGauge(METRIC_NAMES.epoch, { unit: "1", description: "Newest leadership epoch seen" });
    this.leaderChanges = meter.createCounter(METRIC_NAMES.leaderChanges, {
      unit: "{change}",
      description: "Terms begun by another instance than the previous holder",
    });
    this.activeJobs = meter.createGauge(METRIC_NAMES.activeJobs, { unit: "{job}", description: "Active jobs" });
    this.removalFailures = meter.createCounter(METRIC_NAMES.removalFailures, {
      unit: "{failure}",
      description: "Removals of ended jobs that failed and were put off",
    });
    this.itemsHeldLoop = meter.createCounter(METRIC_NAMES.itemsHeldLoop, {
      unit: "{item}",
      description: "Work items that held the event loop past what a leader's heartbeat allows",
    });
    const gauge = (name: string, unit: string, description: string): Gauge =>
      meter.createGauge(name, { unit, description });
    this.limitGauges = {
      running: gauge(METRIC_NAMES.limitRunning, "{item}", "Items that may be running against a limit"),
      concurrency: gauge(METRIC_NAMES.limitConcurrency, "{item}", "A pool's concurrency limit"),
      ratePermits: gauge(METRIC_NAMES.limitRatePermits, "{permit}", "Rate permits in use in a pool"),
      starts: gauge(METRIC_NAMES.limitStarts, "{item}", "Starts reported in a pool's last period"),
      waiting: gauge(METRIC_NAMES.limitWaiting, "{item}", "Items waiting for a pool"),
    };
  }

  /** Records each limited pool's use (the grant ledger, as the status page shows it). */
  recordPools(pools: readonly PoolView[]): void {
    for (const view of pools) {
      const attributes = { pool: view.pool };
      const { concurrency, rate } = view;
      if (concurrency !== undefined) {
        this.limitGauges.running.record(concurrency.running, attributes);
        this.limitGauges.concurrency.record(concurrency.limit, attributes);
      }
      if (rate !== undefined) {
        this.limitGauges.ratePermits.record(rate.permitsInUse, { ...attributes, burst: rate.burst });
        this.limitGauges.starts.record(rate.reportedStarts, attributes);
      }
      this.limitGauges.waiting.record(view.waitingItems, attributes);
    }
  }

  /**
   * Records what an event tells: the epoch, a leader change, a step's duration (`started`: its step-started event's
   * time and trigger, when this invocation saw it) and the active jobs.
   */
  recordEvent(event: AppEvent, started: StepStart | undefined): void {
    const epoch = "epoch" in event ? event.epoch : "leaderEpoch" in event ? event.leaderEpoch : undefined;
    if (epoch !== undefined) this.epoch.record(epoch);
    if (event.type === "lease-acquired" && event.previousHolder !== "" && event.previousHolder !== event.instanceId)
      this.leaderChanges.add(1);
    if (event.type === "step-completed" || event.type === "step-aborted") this.recordStepEnd(event, started);
    if (event.type === "job-removal-failed") this.removalFailures.add(1);
    if (event.type === "item-held-event-loop") this.itemsHeldLoop.add(1, { kind: event.kind });
  }

  /** Records a worker's unit: its items done and failed, by task kind. */
  recordWork(outcome: WorkOutcome): void {
    if (outcome.status === "rejected") return;
    if (outcome.itemsDone > 0) this.items.add(outcome.itemsDone, { kind: outcome.kind, outcome: "done" });
    if (outcome.itemsFailed > 0) this.items.add(outcome.itemsFailed, { kind: outcome.kind, outcome: "failed" });
  }

  /** Records a queue's depth. */
  recordQueueDepth(role: QueueRole, queueName: string, depth: number): void {
    this.queueDepth.record(depth, { queue: role, queueName });
  }

  /** Records the fold lag: the age of the oldest result waiting, in ms (0 when none waits). */
  recordFoldLag(ageMs: number): void {
    this.foldLag.record(ageMs / 1000);
  }

  private recordStepEnd(event: StepCompletedEvent | StepAbortedEvent, started: StepStart | undefined): void {
    if (event.type === "step-completed") this.activeJobs.record(event.activeJobs);
    if (started === undefined) return;
    const outcome = event.type === "step-completed" ? "completed" : "aborted";
    this.stepDuration.record(Math.max(0, event.atMs - started.atMs) / 1000, { outcome, trigger: started.trigger });
  }
}
