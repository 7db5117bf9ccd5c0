import FakeTimers from "@sinonjs/fake-timers";
import type { Scheduler } from "fast-check";
import { syncBuiltinESMExports } from "node:module";
import { electorTimings, type CoordinatorApp, type Sink } from "../../src/app/context";
import { eventEpoch, type AppEvent } from "../../src/app/events";
import { handleWorkMessage, runCoordinatorTick } from "../../src/app/operations";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { keys } from "../../src/coordination/state/jobState";
import { storeManifestSubmission } from "../../src/coordination/jobs/manifest";
import { storeSubmission, validateSubmission } from "../../src/coordination/jobs/submit";
import { epochOptions } from "../../src/coordination/state/termHistory";
import { JobStopChecks } from "../../src/coordination/state/jobStops";
import type { WorkOutcome } from "../../src/coordination/worker/worker";
import { ActivityWakeUps, sendWakeUp } from "../../src/coordination/wake/wake";
import { settingsSchema, type Settings } from "../../src/app/settings";
import {
  LeaderElector,
  type LeadOptions,
  type LeadResult,
  type LeaderTask,
} from "../../src/library/leadership/LeaderElector";
import type { LeaderElectorOptions } from "../../src/library/leadership/options";
import { requestStepDown } from "../../src/library/leadership/leaderInfo";
import type { LeadershipTerm } from "../../src/library/leadership/Term";
import { StorageError } from "../../src/library/errors";
import { silentLogger } from "../../src/library/util/logger";
import { activityEndMs } from "./activity";
import { emptyActivityLog, pollLikeTheHost, runWakeTrigger, startActivity, type ActivityLog } from "./activityWorld";
import { StorageAccount } from "./azure";
import { simRegistry, sumKind } from "./kinds";
import { Network, SimProcess, never, pause } from "./network";
import type { FaultEvent, ItemPlan, JobPlan, Plan } from "./plan";
import { SimFiles, SimLeaseStore, SimMessageQueue, SimStateStore, type PortContext } from "./ports";
import { SimLifecycle, itemCountOf } from "./lifecycleWorld";
import { padOf } from "./chunkMix";
import { SimChunks } from "./chunkWorld";
import { SimGarbage } from "./garbageWorld";
import { SimTakeover, simLeaderWatch } from "./takeover";
import { SimLimits } from "./limitsWorld";

/** Timing of the simulated app: Azure's minimum lease, the library's defaults, a short tick and step. */
export const SIM_TIMING = {
  tickMs: 10_000,
  leaseDurationS: 15,
  stepBudgetMs: 5_000,
  dispatchBatchSize: 4,
  /** The host's maxDequeueCount (host.json). */
  maxDequeueCount: 5,
  /** The host's visibility timeout after a failed delivery (host.json: 5 s). */
  retryVisibilityS: 5,
  /**
   * How long a worker keeps a received message invisible: it reappears this long after a worker died on it. (The
   * host renews a 10-minute visibility while the function runs; shorter here so a run stays short.)
   */
  workerVisibilityS: 10,
  /**
   * How long held items wait for their unit's own result (`INFERRED_FAILURE_HOLD_MS`, 10 minutes; scaled down as the
   * visibility is: a simulated unit takes seconds).
   */
  inferredFailureHoldMs: 60_000,
  /**
   * After faults stop, every job must end within this long: 180 s for its units
   * (docs/contributing/simulation-host-model.md derives it), and then the hold of items held last (60 s) and a received
   * result's visibility a settling fold waits out (30 s).
   */
  calmLimitMs: 270_000,
  /** …and the run goes on at least this long to watch leadership (a lease and a tick, and some). */
  minCalmMs: 30_000,
} as const;

const CONTAINERS = {
  leases: "leases",
  state: "coordinator-state",
  inputs: "job-inputs",
  system: "coordinator-system",
} as const;
const QUEUES = { work: "work-items", results: "work-results" } as const;

/** Mulberry32: the run's own small deterministic random source. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A leader's step (the task of one term), as the invariants see it. */
export interface StepRecord {
  epoch: number;
  process: SimProcess;
  startMs: number;
  endMs: number | undefined;
}

/** A term, from its record write to its end (lost, released, or the process crashed). */
export interface TermRecord {
  epoch: number;
  process: SimProcess;
  beganMs: number;
  endedMs: number | undefined;
}

/** A tick that ended in an error. */
export interface TickError {
  process: string;
  epoch: number | undefined;
  atMs: number;
  error: unknown;
}

/** A job the client submitted. */
export interface SubmittedJob {
  id: string;
  plan: JobPlan;
  /** Each item's input text as a worker would read it (undefined: its blob does not exist). */
  inputs: (string | undefined)[];
  params: unknown;
}

/** Everything the invariants read. */
export interface History {
  steps: StepRecord[];
  terms: TermRecord[];
  tickErrors: TickError[];
  freezes: { process: SimProcess; fromMs: number; toMs: number | undefined }[];
  /** When an operator broke the lease or deleted its container: the holder then learns at its next renewal. */
  leaseInterventions: number[];
  events: number;
}

/** An elector that tells the world when its task (the step) starts and ends. */
class ObservedElector extends LeaderElector {
  constructor(
    options: LeaderElectorOptions,
    private readonly onStep: (phase: "start" | "end", term: LeadershipTerm) => void,
  ) {
    super(options);
  }

  override tryLead<T>(task: LeaderTask<T>, options?: LeadOptions): Promise<LeadResult<T>> {
    return super.tryLead(async (term) => {
      this.onStep("start", term);
      try {
        return await task(term);
      } finally {
        this.onStep("end", term);
      }
    }, options);
  }
}

/**
 * One instance of the app: one process (replaced when it crashes and restarts) with a coordinator timer and a worker.
 */
export class SimInstance {
  readonly process: SimProcess;
  readonly app: CoordinatorApp;
  readonly sink: Sink;
  readonly workQueue: SimMessageQueue;
  readonly workPoison: SimMessageQueue;
  readonly wakeQueue: SimMessageQueue;
  /** The process's shutdown signal (the appTerminate hook's), which its running units are given. */
  readonly shutdown = new AbortController();
  ticking = 0;

  constructor(
    private readonly world: SimWorld,
    readonly index: number,
    generation: number,
    private readonly lacksSum: boolean,
  ) {
    this.process = new SimProcess(`i${index}.${generation}`, () => Date.now());
    this.process.clockRate = world.takeover.clockRate();
    const ctx: PortContext = { net: world.net, account: world.account, process: this.process };
    this.sink = { logger: silentLogger, emit: (event) => world.onEvent(this.process, event) };
    const state = new SimStateStore(ctx, CONTAINERS.state);
    const leaseStore = world.takeover.leaseStoreFor(index, new SimLeaseStore(ctx, CONTAINERS.leases));
    this.workQueue = new SimMessageQueue(ctx, QUEUES.work);
    this.workPoison = new SimMessageQueue(ctx, `${QUEUES.work}-poison`);
    const elector = new ObservedElector(
      {
        store: leaseStore,
        instanceId: this.process.name,
        // The app's timings and takeover, as assembleCoordinatorApp passes them (lease 15 s: SIM_TIMING).
        ...electorTimings(world.settings),
        ...epochOptions(state),
        clock: this.process.clock,
        random: world.random,
        onEvent: (event) => {
          world.onEvent(this.process, { ...event });
        },
      },
      (phase, term) => {
        world.onStep(this.process, phase, term);
      },
    );
    const wakeQueue = new SimMessageQueue(ctx, "coordinator-wake");
    this.wakeQueue = wakeQueue;
    // With the wake-ups model on, workers wake the coordinator (at most every 5 s per process) and a wake-up that finds
    // the lease held sends follow-ups, as the app's defaults do; off, nothing sends one.
    const wakeIntervalMs = world.plan.activity.wakeUps ? 5000 : 0;
    const system = new SimFiles(ctx, CONTAINERS.system);
    this.app = {
      settings: world.settings,
      instanceId: this.process.name,
      leaseStore,
      state,
      system,
      inputs: new SimFiles(ctx, CONTAINERS.inputs),
      wakeQueue,
      workQueue: this.workQueue,
      resultsQueue: new SimMessageQueue(ctx, QUEUES.results),
      workPoisonQueue: this.workPoison,
      resultsPoisonQueue: new SimMessageQueue(ctx, `${QUEUES.results}-poison`),
      registry: simRegistry(lacksSum ? [sumKind.name] : [], undefined, undefined, world.plan.limits.kinds),
      elector,
      activityWakeUps: new ActivityWakeUps(wakeQueue, {
        intervalMs: wakeIntervalMs,
        maxFollowUps: wakeIntervalMs === 0 ? 0 : Math.ceil((3 * SIM_TIMING.leaseDurationS * 1000) / wakeIntervalMs),
        from: this.process.name,
      }),
      leaderWatch: simLeaderWatch(world, this, elector, wakeQueue, world.settings),
      jobStops: new JobStopChecks(system, () => this.process.clock.monotonicMs()),
      chunkCache: world.chunks.optionsFor(this.process),
      inferredFailureHoldMs: SIM_TIMING.inferredFailureHoldMs,
    };
  }

  /** One timer tick of the coordinator function. `force`: even while another tick of this process runs. */
  tick(force: boolean): void {
    const { process, world } = this;
    if (process.crashed || process.frozen || (this.ticking > 0 && !force)) return;
    this.ticking++;
    let epoch: number | undefined;
    const sink: Sink = {
      logger: silentLogger,
      emit: (event) => {
        if (event.type === "step-started") epoch = event.epoch;
        this.sink.emit(event);
      },
    };
    runCoordinatorTick(this.app, sink).then(
      () => {
        this.ticking--;
      },
      (error: unknown) => {
        this.ticking--;
        if (!process.crashed) world.history.tickErrors.push({ process: process.name, epoch, atMs: Date.now(), error });
      },
    );
  }

  /** The queue trigger as the Functions host runs it (batch, retry with visibility, poison after maxDequeueCount). */
  runWorker(): Promise<void> {
    return pollLikeTheHost(
      this.world,
      this.process,
      async () => {
        // A host shutting down takes no more messages: it stops polling until its process ends.
        if (this.shutdown.signal.aborted) return never();
        const messages = await this.workQueue.receive(4, SIM_TIMING.workerVisibilityS);
        this.world.lifecycle.holdWhileRunning(this, QUEUES.work, messages);
        return messages;
      },
      (message) => this.deliver(message).finally(() => this.world.lifecycle.settled(message.id)),
      true, // the Functions host runs a batch's messages at once (host.json: batchSize 16, newBatchThreshold 8)
    );
  }

  private async deliver(message: Awaited<ReturnType<SimMessageQueue["receive"]>>[number]): Promise<void> {
    const { maxDequeueCount, retryVisibilityS } = SIM_TIMING;
    const { world } = this;
    try {
      if (message.dequeueCount > maxDequeueCount || message.text === undefined) {
        world.lifecycle.onPoisonedOnItsOwn(message.text); // its last delivery died with its process
        await this.workPoison.sendRaw(message.rawText);
        await this.workQueue.delete(message);
        return;
      }
      if (this.shutdown.signal.aborted) return; // shutting down: the host takes no more (visibility lapses)
      // The work itself takes a while, in the unit's items: after the worker's stop checks, cut short by their signal.
      const itemMs = Math.round(world.random() * world.lifecycle.unitMs(message.text)) / itemCountOf(message.text);
      let ok = true;
      let storageTrouble = false;
      let outcome: WorkOutcome | undefined;
      const startedMs = Date.now();
      const last = message.dequeueCount >= maxDequeueCount;
      const processed: number[] = [];
      const registry = simRegistry(
        this.lacksSum ? [sumKind.name] : [],
        (_, index) => {
          processed.push(index);
          world.lifecycle.onItemDone(this, last);
        },
        async (text, abortSignal, item) => {
          // An item under limits is recorded from the kind's call (issue 42; limitsWorld.ts).
          const limited = world.limits.onStart(this.process, item.jobId, item.index);
          try {
            // Cut short when the run ends too, so no item is left pending into the next run (worker/itemCall.ts
            // watches the event loop for running items with a module-wide timer).
            await pause(itemMs, AbortSignal.any([abortSignal, world.ended.signal]));
            // The item kills the process (the kind then throws, to no one): the message reappears after its
            // visibility.
            if (text === "kill") world.killWorker(this);
          } finally {
            // A frozen process finishes nothing: its item ends at the thaw at the earliest (never, if it dies first:
            // its crash ended it).
            if (limited !== undefined) {
              await this.process.awake();
              world.limits.onEnd(limited);
            }
          }
        },
        world.plan.limits.kinds,
      );
      try {
        outcome = await handleWorkMessage(
          { ...this.app, registry },
          this.sink,
          message.text,
          { id: message.id, dequeueCount: message.dequeueCount },
          { abortSignal: this.shutdown.signal },
        );
      } catch (error) {
        ok = false;
        storageTrouble = error instanceof StorageError;
      }
      world.lifecycle.onDeliveryEnded(this, message.text, { last, startedMs, processed, outcome, storageTrouble });
      if (ok) await this.workQueue.delete(message);
      else if (message.dequeueCount >= maxDequeueCount) {
        await this.workPoison.sendRaw(message.rawText);
        await this.workQueue.delete(message);
      } else await this.workQueue.update(message, retryVisibilityS);
    } catch {
      // Settling failed (storage trouble): the message reappears when its visibility lapses.
    }
  }
}

/** Input text and submission form of one planned item. */
function itemFor(
  kind: string,
  item: ItemPlan,
  blobName: string,
  pad = 0,
): { input: { inline: string } | { blob: string }; text: string | undefined; blob?: string } {
  if (kind === "group-by") {
    const line = (key: string, value: unknown): string => JSON.stringify({ k: key, v: value });
    switch (item.t) {
      case "ok": {
        // A large item (chunkMix.ts): its record carries a field the kind ignores.
        const text =
          pad > 0 ? JSON.stringify({ k: item.key, v: item.value, pad: "x".repeat(pad) }) : line(item.key, item.value);
        return { input: { inline: text }, text };
      }
      case "blob":
        return { input: { blob: blobName }, text: line(item.key, item.value), blob: blobName };
      case "missingBlob":
        return { input: { blob: `${blobName}.missing` }, text: undefined };
      default:
        return { input: { inline: line("a", "not-a-number") }, text: line("a", "not-a-number") };
    }
  }
  const text =
    item.t === "crash" || item.t === "kill"
      ? item.t
      : item.t === "bad" || item.t === "missingBlob"
        ? "abc"
        : String(item.value).padEnd(item.t === "ok" && pad > 0 ? pad : 0);
  return { input: { inline: text }, text };
}

/** User files that are not job inputs but sit in the input container under names the app uses for its own files. */
export const DECOY_BLOBS: Record<string, string> = {
  "inbox/user-notes.csv": "region,amount\nnorth,1\n",
  "jobs/user-report.csv": "region,amount\nsouth,2\n",
};

/**
 * The simulated system: a storage account, a network whose interleavings fast-check's scheduler picks, N instances
 * on a virtual clock, a client that submits jobs and an operator that injects faults.
 */
export class SimWorld {
  readonly account: StorageAccount;
  readonly net: Network;
  readonly random: () => number;
  readonly settings: Settings;
  readonly instances: SimInstance[] = [];
  readonly history: History = { steps: [], terms: [], tickErrors: [], freezes: [], leaseInterventions: [], events: 0 };
  readonly jobs: SubmittedJob[] = [];
  readonly userBlobs = new Map<string, string>();
  /** Takeover below the lease: terms, clock rates, watchers' wake-ups, its invariant (test/sim/takeover.ts). */
  readonly takeover: SimTakeover;
  /** Issue 37's models: shutdowns on a unit's last delivery, and what the invariants read (lifecycleWorld.ts). */
  readonly lifecycle = new SimLifecycle(this);
  /** Issue 37.2's model: what the leaders' chunk caches hold (chunkWorld.ts). */
  readonly chunks = new SimChunks(this);
  /** Issue 43's model: forged and damaged results, and the readable results that landed (garbageWorld.ts). */
  readonly garbage = new SimGarbage(this);
  /** Issue 42's model: items under limits, their starts and ends (limitsWorld.ts). */
  readonly limits = new SimLimits(this);
  readonly client: SimProcess;
  private readonly clientFiles: SimFiles;
  private readonly clientSystem: SimFiles;
  private readonly clientState: SimStateStore;
  private readonly clientLease: SimLeaseStore;
  private readonly clientWake: SimMessageQueue;
  /** Issue 21's models: what they did (`activityWorld.ts`). */
  readonly activityLog: ActivityLog = emptyActivityLog();
  /** Processes of operators and of the status page: they stop with the run. */
  readonly operators: SimProcess[] = [];
  /** Every storage request of the instances takes this long (set by a burst of jobs). */
  storageLatencyMs = 0;
  readonly containers = CONTAINERS;
  private generation = 0;
  faultEndMs = 0;
  startMs = 0;
  over = false;

  constructor(
    readonly plan: Plan,
    readonly scheduler: Scheduler,
  ) {
    this.random = seededRandom(plan.randomSeed);
    this.takeover = new SimTakeover(this, seededRandom(plan.randomSeed ^ 0x22_22_22));
    this.account = new StorageAccount(() => Date.now(), this.random);
    this.net = new Network(scheduler, this.random);
    this.settings = settingsSchema.parse({
      STEP_BUDGET_MS: SIM_TIMING.stepBudgetMs,
      DISPATCH_BATCH_SIZE: SIM_TIMING.dispatchBatchSize,
      LEASE_DURATION_SECONDS: SIM_TIMING.leaseDurationS,
      WORK_UNIT_MAX_ITEMS: plan.unitMaxItems,
      // The plan's unit size as it is (up to the in-flight window, 2 × 4 items), or units of 2 (a spread of 4): jobs of
      // 1–16 items are not spread further (the default, 16 units, would make every unit one item): units of several
      // items meet faults; with units of 2, a job's tail of 4 goes out with the window (issue 37).
      WORK_UNIT_SPREAD: plan.lifecycle.unitSpread,
      // The leader's sentinel is a wake-up: on with the wake-ups model (every instance runs the wake trigger), as the
      // app's defaults have it; off without it, where nobody would receive one.
      LEADER_SENTINEL_SECONDS: plan.activity.wakeUps ? 2 : 0,
    });
    this.client = new SimProcess("client", () => Date.now());
    const ctx: PortContext = { net: this.net, account: this.account, process: this.client };
    this.clientFiles = new SimFiles(ctx, CONTAINERS.inputs);
    this.clientSystem = new SimFiles(ctx, CONTAINERS.system);
    this.clientState = new SimStateStore(ctx, CONTAINERS.state);
    this.clientLease = new SimLeaseStore(ctx, CONTAINERS.leases);
    this.clientWake = new SimMessageQueue(ctx, "coordinator-wake");
  }

  onEvent(process: SimProcess, event: AppEvent): void {
    if (process.crashed || this.over) return;
    this.history.events++;
    const now = Date.now();
    const epoch = eventEpoch(event) ?? 0;
    if (event.type === "lease-acquired") this.history.terms.push({ epoch, process, beganMs: now, endedMs: undefined });
    if (event.type === "job-removal-failed") this.lifecycle.removalFailures.add(event.jobId);
    if (event.type === "lease-lost" && event.reason === "revoked")
      this.activityLog.revokedStops.push({ atMs: now, epoch });
    if (event.type === "lease-lost" || event.type === "lease-released") {
      const term = this.history.terms.find(
        (t) => t.process === process && t.epoch === epoch && t.endedMs === undefined,
      );
      if (term !== undefined) term.endedMs = now;
    }
  }

  onStep(process: SimProcess, phase: "start" | "end", term: LeadershipTerm): void {
    this.takeover.onStep(process, phase, term);
    if (process.crashed || this.over) return;
    if (phase === "start") {
      this.history.steps.push({ epoch: term.epoch, process, startMs: Date.now(), endMs: undefined });
      const index = this.instances.findIndex((instance) => instance.process === process);
      for (const fault of this.leaderFaults.splice(0)) this.inject({ ...fault, instance: index });
    } else {
      const step = this.history.steps.find(
        (s) => s.process === process && s.epoch === term.epoch && s.endMs === undefined,
      );
      if (step !== undefined) step.endMs = Date.now();
      this.chunks.onStepEnd(process);
    }
  }

  /** Whether the deploy that left some processes without a kind has completed (at the end of the faults). */
  private deployed = false;

  private startInstance(index: number): SimInstance {
    const instance = new SimInstance(
      this,
      index,
      ++this.generation,
      !this.deployed && (this.plan.lacksSum[index] ?? false),
    );
    this.instances[index] = instance;
    instance.process.baseLatencyMs = this.storageLatencyMs;
    void instance.runWorker();
    if (this.plan.activity.wakeUps) void runWakeTrigger(this, instance, instance.wakeQueue);
    return instance;
  }

  /** Runs `action` at `ms` after the start of the run. */
  at(ms: number, action: () => void): void {
    setTimeout(action, Math.max(0, ms - (Date.now() - this.startMs)));
  }

  /** Sets up the run: instances, timers, jobs and faults. Call with the fake clock installed. */
  start(): void {
    this.startMs = Date.now();
    this.net.startMs = this.startMs;
    this.account.createContainer(CONTAINERS.inputs);
    for (const [name, text] of Object.entries(DECOY_BLOBS)) {
      this.userBlobs.set(name, text);
      this.account.putBlob(CONTAINERS.inputs, name, text, { by: "user" });
    }
    for (let index = 0; index < this.plan.instances; index++) {
      this.startInstance(index);
      const loop = (): void => {
        const instance = this.instances[index];
        // A tick that comes while a killed worker restarts goes to the replacement once it is up: the Functions host
        // owns the timer and outlives the language worker it restarts.
        if (instance?.process.crashed === true && this.restarting.has(index)) this.missedTicks.add(index);
        else instance?.tick(false);
        setTimeout(loop, SIM_TIMING.tickMs - 1000 + Math.round(this.random() * 2000));
      };
      setTimeout(loop, 200 + Math.round(this.random() * SIM_TIMING.tickMs));
    }
    for (const [n, job] of this.plan.jobs.entries()) this.at(job.atS * 1000, () => void this.submit(n, job));
    let end = 0;
    for (const fault of this.plan.faults) {
      end = Math.max(end, (fault.atS + fault.forS) * 1000);
      this.at(fault.atS * 1000, () => {
        this.inject(fault);
      });
    }
    const lastJobMs = Math.max(activityEndMs(this.plan.activity), ...this.plan.jobs.map((job) => job.atS * 1000));
    this.faultEndMs = this.startMs + Math.max(end + 2000, lastJobMs); // + 2 s: an armed fault strikes up to 2 s late
    this.at(this.faultEndMs - this.startMs, () => {
      this.heal();
    });
    startActivity(this);
    this.lifecycle.start(CONTAINERS.system);
    this.garbage.start(QUEUES);
  }

  /** Submits job `n` of the plan (or of a burst): inline, or through a manifest; with a wake-up when those are on. */
  async submit(n: number, job: JobPlan): Promise<void> {
    // With the chunk-mix model, the plan's jobs are stored in chunks of 1–3 items, some padded large (chunkMix.ts).
    const chunked = n < this.plan.jobs.length ? this.plan.chunkMix.jobs[n] : undefined;
    const items = job.items.map((item, i) => itemFor(job.kind, item, `data/j${n}-${i}.ndjson`, padOf(chunked, i)));
    for (const item of items) {
      if (item.blob !== undefined && item.text !== undefined) {
        this.userBlobs.set(item.blob, item.text);
        await this.clientFiles.writeText(item.blob, item.text);
      }
    }
    const params = job.kind === "group-by" ? { format: "ndjson", keyField: "k", valueField: "v" } : { scale: 2 };
    // A job of the plan may have limits of its own (issue 42); its kind's are those its code declares.
    const own = n < this.plan.jobs.length ? (this.plan.limits.jobs[n] ?? null) : null;
    const validated = validateSubmission(
      { kind: job.kind, params, items: items.map((item) => item.input), ...(own === null ? {} : { limits: own }) },
      simRegistry([], undefined, undefined, this.plan.limits.kinds),
    );
    if (!validated.ok) throw new Error(`simulator built an invalid submission: ${JSON.stringify(validated.errors)}`);
    const timeout = job.timeoutS === null ? {} : { timeoutS: job.timeoutS };
    const { kindLimits, limits } = validated.value;
    const header = {
      kind: validated.value.kind,
      params: validated.value.params,
      ...timeout,
      ...(kindLimits === undefined ? {} : { kindLimits }),
      ...(limits === undefined ? {} : { limits }),
    };
    const now = { now: () => Date.now(), ...(chunked === undefined ? {} : { chunkSize: chunked.chunkSize }) };
    let id: string;
    if (this.plan.activity.viaManifest[n] === true) {
      // The user uploads the manifest to the input container; the submission reads it into the job's chunks.
      const manifest = `manifests/j${n}.ndjson`;
      const text = `${items.map((item) => JSON.stringify(item.input)).join("\n")}\n`;
      this.userBlobs.set(manifest, text);
      await this.clientFiles.writeText(manifest, text);
      const stored = await storeManifestSubmission(
        { system: this.clientSystem, inputs: this.clientFiles },
        { ...header, manifest },
        now,
      );
      if (!stored.ok) throw new Error(`simulator built an invalid manifest: ${JSON.stringify(stored.errors)}`);
      id = stored.id;
    } else {
      ({ id } = await storeSubmission(this.clientSystem, { ...header, items: validated.value.items ?? [] }, now));
    }
    this.jobs.push({ id, plan: job, inputs: items.map((item) => item.text), params });
    if (this.plan.activity.wakeUps)
      await sendWakeUp(this.clientWake, { reason: "job-submitted", jobId: id, from: "client" }).catch(() => undefined);
    if (job.deleteChunk) await this.clientSystem.delete(keys.chunk(id, 0));
    if (job.cancelAfterS !== null) {
      setTimeout(() => {
        // The submitter's request (DELETE /api/jobs/{id}); it may find the job ended, or storage unreachable.
        requestCancel({ state: this.clientState, system: this.clientSystem }, id, { now: () => Date.now() }).catch(
          () => undefined,
        );
      }, job.cancelAfterS * 1000);
    }
  }

  /** Faults aimed at "the leader": they strike the next process that starts a step. */
  private readonly leaderFaults: FaultEvent[] = [];

  private inject(fault: FaultEvent): void {
    if (fault.instance < 0) {
      this.leaderFaults.push(fault);
      return;
    }
    const instance = this.instances[fault.instance];
    if (instance === undefined) return;
    const { process } = instance;
    const until = (action: () => void): void => {
      setTimeout(action, fault.forS * 1000);
    };
    switch (fault.kind) {
      case "freeze":
        // Strikes at one of the process's next requests, so it freezes with that request (and its step) in flight.
        this.arm(process, () => {
          if (process.crashed || process.frozen) return;
          process.freeze();
          const record = { process, fromMs: Date.now(), toMs: undefined as number | undefined };
          this.history.freezes.push(record);
          until(() => {
            // The thaw comes between two requests of whoever is busy then (e.g. between a new leader's read and write).
            this.net.atRequest(1 + Math.floor(this.random() * 8), () => {
              if (!process.frozen) return;
              process.unfreeze();
              record.toMs = Date.now();
            });
          });
        });
        return;
      case "crash":
        this.arm(process, () => {
          this.crash(process);
          until(() => {
            if (this.instances[fault.instance]?.process === process) this.startInstance(fault.instance);
          });
        });
        return;
      case "outage":
      case "hang":
        this.impaired(process, fault.forS);
        process.outage = fault.kind === "outage" ? "refuse" : "hang";
        until(() => {
          process.outage = "none";
        });
        return;
      case "slow":
        this.impaired(process, fault.forS);
        process.latencyMs = fault.latencyMs;
        until(() => {
          process.latencyMs = 0;
        });
        return;
      case "stepDown":
        requestStepDown(this.clientLease).catch(() => undefined);
        return;
      case "breakLease":
        this.history.leaseInterventions.push(Date.now());
        void this.clientLease.breakLease(fault.forS % 2 === 0 ? 0 : Math.min(fault.forS, 60));
        return;
      case "deleteLease":
        this.history.leaseInterventions.push(Date.now());
        this.activityLog.leaseDeletions.push(Date.now());
        this.account.deleteContainer(CONTAINERS.leases);
        return;
      case "overlapTick":
        instance.tick(true);
        instance.tick(true);
        return;
      case "duplicates":
        for (const name of Object.values(QUEUES)) this.account.queue(name).duplicateRate = 0.3;
        until(() => {
          for (const name of Object.values(QUEUES)) this.account.queue(name).duplicateRate = 0;
        });
        return;
    }
  }

  /** Logs that a fault slows or stops the process's storage requests for the next `forS` seconds. */
  private impaired(process: SimProcess, forS: number): void {
    this.activityLog.impairments.push({ process, fromMs: Date.now(), toMs: Date.now() + forS * 1000 });
  }

  /** A worker process died on an item: it is restarted a moment later, as the host restarts a crashed worker. */
  killWorker(instance: SimInstance): void {
    if (this.instances[instance.index] !== instance || instance.process.crashed) return;
    this.crash(instance.process);
    this.restarting.add(instance.index);
    setTimeout(() => {
      this.restarting.delete(instance.index);
      const missed = this.missedTicks.delete(instance.index);
      if (this.instances[instance.index] !== instance) return;
      const replacement = this.startInstance(instance.index);
      if (missed) replacement.tick(false);
    }, 1000);
  }

  /** Instances whose killed worker is being restarted, and those of them a timer tick came for meanwhile. */
  private readonly restarting = new Set<number>();
  private readonly missedTicks = new Set<number>();

  /** Arms a fault to strike at one of the process's next few requests (at any await), or after 2 s at the latest. */
  private arm(process: SimProcess, fire: () => void): void {
    const armed = { count: 1 + Math.floor(this.random() * 16), fire };
    process.armed = armed;
    setTimeout(() => {
      if (process.armed !== armed) return;
      process.armed = undefined;
      fire();
    }, 2000);
  }

  private crash(process: SimProcess): void {
    if (process.crashed) return;
    const now = Date.now();
    process.crash();
    this.limits.onCrash(process);
    for (const step of this.history.steps) if (step.process === process && step.endMs === undefined) step.endMs = now;
    for (const term of this.history.terms)
      if (term.process === process && term.endedMs === undefined) term.endedMs = now;
    for (const freeze of this.history.freezes)
      if (freeze.process === process && freeze.toMs === undefined) freeze.toMs = now;
  }

  /** Faults stop: every process thaws, storage answers, crashed instances are back, no more duplicates. */
  private heal(): void {
    // The deploy completes: processes without a kind are replaced by ones with every kind (a missing kind is a
    // deploy in progress; a kind no process will ever have is a configuration no coordinator can finish).
    this.deployed = true;
    for (const [index, instance] of this.instances.entries()) {
      if (this.plan.lacksSum[index] === true && !instance.process.crashed) this.crash(instance.process);
    }
    for (const [index, instance] of this.instances.entries()) {
      const { process } = instance;
      if (process.frozen) {
        process.unfreeze();
        for (const freeze of this.history.freezes)
          if (freeze.process === process && freeze.toMs === undefined) freeze.toMs = Date.now();
      }
      process.outage = "none";
      process.latencyMs = 0;
      process.armed = undefined;
      if (process.crashed) this.startInstance(index);
    }
    for (const name of Object.values(QUEUES)) this.account.queue(name).duplicateRate = 0;
  }

  private readonly parsed = new Map<string, { etag: string; value: unknown }>();

  /** The stored state of a job, read directly from the account (no request); parsed once per version. */
  jobState(id: string): { value: unknown; etag: string } | undefined {
    const container = this.account.containers.get(CONTAINERS.state);
    const blob = container?.blobs.get(keys.jobState(id));
    if (blob === undefined) return undefined;
    const cached = this.parsed.get(id);
    if (cached?.etag === blob.etag) return cached;
    const fresh = { etag: blob.etag, value: JSON.parse(blob.text) as unknown };
    this.parsed.set(id, fresh);
    return fresh;
  }

  /** The ETag of a job's stored state, without parsing it. */
  jobEtag(id: string): string | undefined {
    return this.account.containers.get(CONTAINERS.state)?.blobs.get(keys.jobState(id))?.etag;
  }

  /** Writes that landed in the input container, for userInputUnchanged. */
  get inputContainer(): string {
    return CONTAINERS.inputs;
  }

  get stateContainer(): string {
    return CONTAINERS.state;
  }

  /** Fires when the run ends (`stop`). */
  readonly ended = new AbortController();

  /** Ends the run: every process crashes (no more answers), so nothing of it runs on after the fake clock is gone. */
  stop(): void {
    this.over = true;
    this.ended.abort(new Error("The simulated run is over."));
    for (const instance of this.instances) instance.process.crash();
    for (const process of this.operators) process.crash();
    this.client.crash();
  }
}

/** Makes `crypto.randomUUID` (job ids, lease ids) deterministic for one run; returns the restore function. */
export function deterministicUuids(seed: number): () => void {
  const crypto = process.getBuiltinModule("node:crypto");
  const original = crypto.randomUUID;
  const random = seededRandom(seed ^ 0x5bd1e995);
  const hex = (n: number): string => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join("");
  crypto.randomUUID = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
  syncBuiltinESMExports();
  return () => {
    crypto.randomUUID = original;
    syncBuiltinESMExports();
  };
}

/** Installs the virtual clock on the globals the app uses (timers, Date, performance). */
export function installClock(): FakeTimers.Clock {
  return FakeTimers.withGlobal(globalThis).install({
    now: 1_700_000_000_000,
    toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "Date", "performance"],
  });
}
