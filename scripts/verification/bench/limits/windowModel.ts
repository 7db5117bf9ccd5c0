import { storeSubmission } from "../../../../src/coordination/jobs/submit";
import { runCoordinationStep } from "../../../../src/coordination/step/step";
import { ONE_PASS, item, params, readJob, work, world } from "../../../../test/support/coordinationWorld";
import { fakeTerm } from "../../../../test/support/memoryPorts";
import { round, type Measurement } from "./measurement";

/**
 * Why the dispatch window is shared by every job (issue 42): the leader's real step on in-memory ports, in rounds —
 * one pass of the step, then the workers take the oldest `SLOTS` units off the queue and run them — with `BIG_JOBS`
 * large jobs of one tenant running and a small job of another submitted among them. Counted, not timed: the rounds
 * until the small job completes, the large jobs' units served ahead of it, and how full the workers were. Three
 * windows: one per job (the release before: each job keeps twice DISPATCH_BATCH_SIZE on the queue, so N jobs keep N
 * times that ahead of a newcomer), one shared window of twice that (this release), and a shared window of one job's
 * size. The units and windows are the app's defaults scaled down by 16 (a window of 1,024 items in units of 64), so
 * the rounds are few.
 */

const BIG_JOBS = 4;
const BIG_ITEMS = 20_000;
const SMALL_ITEMS = 10;
/**
 * Units the workers run a round: fewer than the leader sends a pass (DISPATCH_BATCH_SIZE is 8 units here), so the
 * workers are what limits the large jobs, as with any job large enough to matter, and the queue fills to the window.
 */
const SLOTS = 6;
/** Rounds before the small job: enough for the queue to fill to the largest window (it grows 128 items a round). */
const WARM_UP_ROUNDS = 40;
const MAX_ROUNDS = 2000;
const SCALE = { dispatchBatchSize: 512, maxInFlight: 1024, workUnitMaxItems: 64, workUnitSpread: 16 } as const;

/** One window's figures. */
export interface WindowCase {
  window: string;
  /** Most items on the queue without a result, over every job (Infinity: one window per job only). */
  maxInFlightTotal: number | null;
  roundsToComplete: number;
  /** Units of the large jobs the workers ran from the small job's submission to its completion. */
  bigUnitsAhead: number;
  /** Of the worker slots of the whole run, the share that ran a unit (before the large jobs ran out of work). */
  slotUse: number;
  /** Items of the large jobs done per round, the run's mean: their throughput. */
  bigItemsPerRound: number;
}

/** The measurement's figures. */
export interface WindowResult {
  model: Record<string, number>;
  cases: WindowCase[];
}

async function runCase(window: string, maxInFlightTotal: number | undefined): Promise<WindowCase> {
  const w = world({ ...SCALE, ...(maxInFlightTotal === undefined ? {} : { maxInFlightTotal }) });
  const term = fakeTerm(1);
  const bigIds: string[] = [];
  for (let job = 0; job < BIG_JOBS; job++)
    bigIds.push(
      (
        await storeSubmission(w.deps.system, {
          kind: "group-by",
          params,
          items: Array.from({ length: BIG_ITEMS }, (_, index) => item(`k${index % 50}`, index)),
          fairnessKey: "tenant-a",
        })
      ).id,
    );
  const bigOf = new Set(bigIds);
  let slotsUsed = 0;
  let slotsOffered = 0;
  const runRound = async (): Promise<number> => {
    await runCoordinationStep(w.deps, term, ONE_PASS);
    const bodies = w.work.bodies().slice(0, SLOTS);
    const units = await work(w.deps, w.work, w.deps, SLOTS);
    slotsUsed += units;
    slotsOffered += SLOTS;
    return bodies.filter((body) => bigOf.has((JSON.parse(body) as { jobId: string }).jobId)).length;
  };
  for (let warm = 0; warm < WARM_UP_ROUNDS; warm++) await runRound();
  const small = await storeSubmission(w.deps.system, {
    kind: "group-by",
    params,
    items: Array.from({ length: SMALL_ITEMS }, (_, index) => item("s", index)),
    fairnessKey: "tenant-b",
  });
  let rounds = 0;
  let bigUnitsAhead = 0;
  while ((await readJob(w.state, small.id))?.status !== "completed") {
    if (++rounds > MAX_ROUNDS) throw new Error(`${window}: the small job did not complete in ${MAX_ROUNDS} rounds`);
    bigUnitsAhead += await runRound();
  }
  let bigDone = 0;
  for (const id of bigIds) bigDone += (await readJob(w.state, id))?.doneCount ?? 0;
  return {
    window,
    maxInFlightTotal:
      maxInFlightTotal === undefined
        ? 2 * SCALE.maxInFlight
        : Number.isFinite(maxInFlightTotal)
          ? maxInFlightTotal
          : null,
    roundsToComplete: rounds,
    bigUnitsAhead,
    slotUse: round(slotsUsed / slotsOffered, 3),
    bigItemsPerRound: round(bigDone / (WARM_UP_ROUNDS + rounds), 1),
  };
}

export const windowModel: Measurement<WindowResult> = {
  name: "window",
  needsCluster: false,
  async run({ log }) {
    const cases: WindowCase[] = [];
    for (const [label, total] of [
      ["one per job (before)", Number.POSITIVE_INFINITY],
      ["shared, 2 × a job's (this release)", undefined],
      ["shared, 1 × a job's", SCALE.maxInFlight],
    ] as const) {
      cases.push(await runCase(label, total));
      log(`  ${label}: ${JSON.stringify(cases.at(-1))}`);
    }
    return {
      model: { bigJobs: BIG_JOBS, bigItems: BIG_ITEMS, smallItems: SMALL_ITEMS, slotsPerRound: SLOTS, ...SCALE },
      cases,
    };
  },
  table(result) {
    return [
      `Dispatch window, in process (${result.model.bigJobs} large jobs of one tenant, a ${result.model.smallItems}-item job of another; ${result.model.slotsPerRound} worker slots a round; windows of ${result.model.maxInFlight} items a job):`,
      "",
      "| Window | Rounds to complete the small job | Large-job units run ahead of it | Worker slots used | Large-job items a round |",
      "| --- | ---: | ---: | ---: | ---: |",
      ...result.cases.map(
        (c) =>
          `| ${c.window} | ${c.roundsToComplete} | ${c.bigUnitsAhead} | ${(c.slotUse * 100).toFixed(1)} % | ${c.bigItemsPerRound} |`,
      ),
    ].join("\n");
  },
};
