import { resolve } from "node:path";
import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { delay } from "../../../../src/library/util/delay";
import { createDemoJob } from "../../../../dev/src/local/demoData";
import type { ChaosInstance } from "../cluster";
import { TaskRegistry } from "../../../../src/coordination/kinds/taskRegistry";
import { groupByKind } from "../../../../src/groupBy/groupBy";
import {
  CHAOS_LIMITS,
  KEYS,
  LIMITED_KIND,
  RUNS_CONTAINER,
  limitedRecordingKind,
  type RecordedRun,
} from "../limits/limitsKind";
import { limitViolations, measurePools, type PoolSpec, type Run } from "../limits/limitMeasure";
import { runScenario, type ScenarioOptions, type ScenarioResult, type ScenarioRun } from "../scenario";
import { killLeaderMidStep, nextTermAfter, type CaughtLeader } from "./faults";

/** The app entry the scenario's instances run: this repository's app with the recording, limited kind. */
const LIMITS_APP = resolve(__dirname, "..", "limits", "limitsApp.ts");
/**
 * How long a received message stays invisible (the local host renews it at half that while its function runs, so what
 * is left of it never falls below 25 s): longer
 * than the freeze, as the Functions host's 10 minutes are, so the frozen worker's units are not handed out again while
 * it is stopped; short enough that the killed leader's units come back within a minute.
 */
const MESSAGE_LEASE_SECONDS = 50;
/**
 * A first grant's lifetime in quick mode (`FLOW_GRANT_SECONDS`): the killed leader's worker had claimed units, whose
 * redeliveries give them back held — their shares stay counted until their grants expire, and 60 s more — so the job
 * waits that long for them. Full mode keeps the default (600 s: the undershoot bound, shown).
 */
const QUICK_GRANT_SECONDS = 30;

/**
 * Flow control on real processes (issue 42): three instances run a job of a kind with global limits — at most 4 items
 * running and 6 started per 2 s, and per key (3 keys) 2 running and 3 started per 2 s — whose every item records its
 * start and end in storage; meanwhile the leader is SIGKILLed mid-step (a replacement starts, as the platform would)
 * and a worker with items in flight is frozen (SIGSTOP for 20–30 s; 20 s in quick mode), then thawed. From the
 * recorded runs alone: per pool, the most items running at once and the most starts in any 2 s window (sliding),
 * against the limits; a run its process never ended counts until that process exited (or the end). The verdict
 * fails on a limit broken, and — as in every scenario — on an item lost or counted twice or a wrong aggregate.
 */
export function flowLimitsScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "flow-limits",
    options,
    async (run) => {
      const { cluster } = run;
      const runs = BlobServiceClient.fromConnectionString(cluster.azurite.connectionString).getContainerClient(
        RUNS_CONTAINER,
      );
      await runs.createIfNotExists();
      await run.startInstances("instance", 3);
      const items = options.quick ? 60 : 150;
      const demo = createDemoJob(items, `chaos/flow-limits-${options.seed}`, options.seed);
      const fromIndex = cluster.records.length;
      const job = await run.jobs.submit(
        "flow-limits",
        { ...demo.spec, kind: LIMITED_KIND },
        demo.blobs,
        demo.expected,
        [],
      );
      const startedMs = Date.now();
      // A grant written down but never sent (the leader killed between its writes and its send) holds its shares for
      // a grant's lifetime and grace (11 min) before its unit is sent again: the job may take that long.
      run.completionTimeoutMs = 14 * 60_000;
      // Full mode kills the leader mid-step: a kill between its ledger write and its send strands a grant for 11 min
      // (the undershoot bound, shown). Quick mode (CI) kills it right after a step that sent units, while its worker
      // runs items: a new leader takes over from the ledger, and the dead worker's units come back held, then run
      // again once their grants (QUICK_GRANT_SECONDS) expire.
      const caught = options.quick
        ? await killLeaderAfterDispatch(run, fromIndex)
        : await killLeaderMidStep(run, "flow-limits", { id: job.id, fromIndex });
      let takeoverMs: number | undefined;
      if (caught !== undefined) {
        await caught.instance.process.exited;
        cluster.startInstance("instance-4");
        const epoch = await nextTermAfter(run, caught.atMs, caught.instance.id);
        const term = cluster.records.find(
          (record) => record.type === "lease-acquired" && record.epoch === epoch && epoch !== undefined,
        );
        if (term === undefined) run.fail("no new term within 30 s of the leader's kill");
        else takeoverMs = Date.parse(term.ts) - caught.atMs;
      }
      const frozen = await freezeWorkerWithItems(run, options.quick ? 20_000 : run.random.int(20_000, 30_000));
      run.afterJobs.push(async () => {
        await judgeLimits(run, runs, job.id);
      });
      Object.assign(run.details, {
        items,
        limits: CHAOS_LIMITS,
        leaderKilled: caught === undefined ? undefined : { instance: caught.instance.id, epoch: caught.epoch },
        takeoverAfterKillMs: takeoverMs,
        frozen,
        faultsDoneAfterMs: Date.now() - startedMs,
      });
    },
    {
      LOCAL_APP_ENTRY: LIMITS_APP,
      LOCAL_MESSAGE_LEASE_SECONDS: String(MESSAGE_LEASE_SECONDS),
      ...(options.quick ? { FLOW_GRANT_SECONDS: String(QUICK_GRANT_SECONDS) } : {}),
    },
    new TaskRegistry([groupByKind, limitedRecordingKind]),
  );
}

/** SIGKILLs the instance whose step just sent units while it has worker invocations in flight (quick mode). */
async function killLeaderAfterDispatch(run: ScenarioRun, fromIndex: number): Promise<CaughtLeader | undefined> {
  const { cluster } = run;
  const deadline = Date.now() + 60_000;
  let index = fromIndex;
  while (Date.now() < deadline) {
    const record = await cluster.waitForEvent(
      (candidate) =>
        candidate.type === "step-completed" && typeof candidate.dispatched === "number" && candidate.dispatched > 0,
      deadline - Date.now(),
      index,
    );
    if (record === undefined) break;
    index = cluster.records.indexOf(record, index) + 1;
    const instance = cluster.instances.find((candidate) => candidate.id === record.instance);
    if (instance === undefined || !instance.process.alive || instance.frozen || instance.inFlight.size === 0) continue;
    instance.process.kill();
    const caught = { instance, epoch: record.epoch ?? 0, atMs: Date.now() };
    run.recordFault(
      { kind: "SIGKILL", target: instance.id, startMs: caught.atMs, endMs: caught.atMs, leaderCheck: true },
      { epoch: caught.epoch },
    );
    run.options.log(`  SIGKILL ${instance.id} after its step of epoch ${caught.epoch} sent units, items in flight`);
    return caught;
  }
  run.fail("no leader that had sent units had items in flight to kill within 60 s");
  return undefined;
}

/** Freezes an instance that has worker invocations in flight for `freezeMs`, then thaws it; what it froze. */
async function freezeWorkerWithItems(
  run: ScenarioRun,
  freezeMs: number,
): Promise<{ instance: string; freezeMs: number; wasLeader: boolean } | undefined> {
  const { cluster } = run;
  const deadline = Date.now() + 60_000;
  let victim: ChaosInstance | undefined;
  while (victim === undefined && Date.now() < deadline) {
    victim = cluster.instances.find(
      (instance) => instance.process.alive && !instance.frozen && instance.inFlight.size > 0,
    );
    if (victim === undefined) await delay(100);
  }
  if (victim === undefined) {
    run.fail("no worker had items in flight to freeze within 60 s");
    return undefined;
  }
  const acquired = cluster.records.filter((record) => record.type === "lease-acquired");
  const wasLeader = acquired.at(-1)?.instance === victim.id;
  const fromMs = Date.now();
  victim.process.signal("SIGSTOP");
  victim.frozen = true;
  run.options.log(`  SIGSTOP ${victim.id} (${victim.inFlight.size} invocations in flight) for ${freezeMs / 1000} s`);
  await delay(freezeMs);
  victim.process.signal("SIGCONT");
  victim.frozen = false;
  const toMs = Date.now();
  run.freezes.push({ instance: victim.id, fromMs, toMs });
  run.recordFault(
    { kind: "SIGSTOP", target: victim.id, startMs: fromMs, endMs: toMs, leaderCheck: wasLeader },
    { frozenMs: toMs - fromMs, worker: true },
  );
  return { instance: victim.id, freezeMs: toMs - fromMs, wasLeader };
}

/** Reads every recorded run of the job and checks each pool's figures against its limits. */
async function judgeLimits(run: ScenarioRun, container: ContainerClient, jobId: string): Promise<void> {
  const recorded: RecordedRun[] = [];
  for await (const blob of container.listBlobsFlat({ prefix: `${jobId}/` })) {
    const text = (await container.getBlobClient(blob.name).downloadToBuffer()).toString("utf8");
    recorded.push(JSON.parse(text) as RecordedRun);
  }
  // A run whose process died before it ended counts until the process exited (as the runner saw it), else the end.
  const exits = new Map<number, number>();
  for (const record of run.cluster.records)
    if (record.type === "instance-exited" && typeof record.pid === "number")
      exits.set(record.pid, Date.parse(record.ts));
  const endOfRun = Date.now();
  const asRuns: Run[] = recorded.map((one) => ({
    key: one.key,
    startMs: one.startMs,
    endMs: one.endMs ?? exits.get(one.pid) ?? endOfRun,
  }));
  const periodMs = (limit: { periodSeconds: number }): number => limit.periodSeconds * 1000;
  const pools: PoolSpec[] = [
    {
      name: `k:${LIMITED_KIND}`,
      concurrency: CHAOS_LIMITS.concurrency,
      rate: { limit: CHAOS_LIMITS.rate.limit, periodMs: periodMs(CHAOS_LIMITS.rate) },
      counts: () => true,
    },
    ...Array.from({ length: KEYS }, (_, key) => ({
      name: `k:${LIMITED_KIND}/t${key}`,
      concurrency: CHAOS_LIMITS.perKey.concurrency,
      rate: { limit: CHAOS_LIMITS.perKey.rate.limit, periodMs: periodMs(CHAOS_LIMITS.perKey.rate) },
      counts: (one: Run) => one.key === `t${key}`,
    })),
  ];
  const figures = measurePools(asRuns, pools, endOfRun);
  for (const problem of limitViolations(figures)) run.fail(problem);
  const perItem = new Map<number, number>();
  for (const one of recorded) perItem.set(one.index, (perItem.get(one.index) ?? 0) + 1);
  Object.assign(run.details, {
    recordedRuns: recorded.length,
    runsWithoutEnd: recorded.filter((one) => one.endMs === undefined).length,
    itemsRunMoreThanOnce: [...perItem.values()].filter((count) => count > 1).length,
    pools: figures.map(({ pool, runs, maxConcurrency, concurrencyLimit, maxStartsInWindow, rateLimit, periodMs }) => ({
      pool,
      runs,
      maxConcurrency,
      concurrencyLimit,
      maxStartsInWindow,
      rateLimit,
      periodMs,
    })),
  });
  for (const figure of figures)
    run.options.log(
      `  ${figure.pool}: at most ${figure.maxConcurrency} running (limit ${figure.concurrencyLimit}), at most ${figure.maxStartsInWindow} starts in a ${figure.periodMs / 1000} s window (limit ${figure.rateLimit}), ${figure.runs} runs`,
    );
}
