import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname } from "node:path";
import { z } from "zod";
import { Bitmap } from "../../../src/coordination/state/bitmap";
import { foldOutcomes, type ItemOutcome } from "../../../src/coordination/fold/foldOutcomes";
import type { FoldCounts } from "../../../src/coordination/fold/foldReport";
import { groupByKind, type GroupByPartial } from "../../../src/groupBy/groupBy";
import { MAX_RECORDED_FAILURES, type JobState } from "../../../src/coordination/state/jobState";
import { TaskRegistry } from "../../../src/coordination/kinds/taskRegistry";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";

/**
 * `npm run bench:fold`: the leader's CPU time to fold one batch of results into a job whose aggregate already holds
 * many groups — the fold before issue 14 (the aggregate validated by zod tuple by tuple, then each result merged into
 * the whole aggregate, which is re-sorted every time) against the fold now (a plain-loop validation, the batch merged
 * with itself, then into the aggregate once in a linear merge) — and, for scale, the time to
 * parse and serialize the job document itself, which both pay. Pure CPU, no storage: every figure is synchronous time
 * the event loop cannot run anything else, renewals included.
 */

const USAGE = `Usage: npm run bench:fold -- [--groups 50000,200000] [--results 128] [--rounds 3] [--out FILE]

Times folding one batch of results into a group-by job whose aggregate holds that many groups, the fold before
issue 14 (one merge of the whole aggregate per result) against the fold now (one merge per batch).

Options:
  --groups LIST  aggregate sizes, comma-separated (default 50000,200000)
  --results N    results in the batch, each with 8 groups, half of them new (default 128, the leader's batch)
  --rounds N     rounds per size and fold, the median is reported (default 3)
  --out FILE     where to write the JSON report (default bench-results/fold.json)`;

interface Args {
  groups: number[];
  results: number;
  rounds: number;
  out: string;
}

function parse(argv: string[]): Args | undefined {
  const values = parseFlags(argv, {
    groups: { type: "string" },
    results: { type: "string" },
    rounds: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return undefined;
  const groups = (values.groups ?? "50000,200000")
    .split(",")
    .map((text) => numberFlag(text.trim(), "--groups", { min: 1, max: 2_000_000 }) ?? 0);
  return {
    groups,
    results: numberFlag(values.results, "--results", { min: 1, max: 10_000 }) ?? 128,
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 50 }) ?? 3,
    out: pathFlag(values.out, "--out") ?? "bench-results/fold.json",
  };
}

/** Group-by's merge as it was before issue 14 (src/groupBy/groupBy.ts at e54cedc): a map of both, then a sort. */
function previousMerge(a: GroupByPartial, b: GroupByPartial): GroupByPartial {
  const merged = new Map<string, GroupByPartial[number]>();
  for (const tuple of [...a, ...b]) {
    const [key, count, sum, min, max] = tuple;
    const current = merged.get(key);
    merged.set(
      key,
      current
        ? [
            key,
            current[1] + count,
            (BigInt(current[2]) + BigInt(sum)).toString(),
            Math.min(current[3], min),
            Math.max(current[4], max),
          ]
        : tuple,
    );
  }
  return [...merged.values()].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
}

/** The group-by kind as it was before issue 14: the zod schema of every tuple, and the merge above. */
const previousKind = {
  ...groupByKind,
  partialSchema: z.array(
    z.tuple([z.string(), z.number().int().min(0), z.string().regex(/^-?\d+$/), z.number(), z.number()]),
  ),
  merge: previousMerge,
};

/** The fold as it was before issue 14 (src/coordination/foldResults.ts at e54cedc), kept here to measure against. */
function previousFold(state: JobState, outcomes: ItemOutcome[], now: number): JobState | undefined {
  const kind = previousKind;
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  let aggregate: GroupByPartial = kind.partialSchema.parse(state.aggregate);
  const failures = [...state.failures];
  let { doneCount, failedCount } = state;
  const fail = (item: number, reason: string): void => {
    failed.add(item);
    failedCount++;
    if (failures.length < MAX_RECORDED_FAILURES) failures.push({ item, reason });
  };
  for (const outcome of outcomes) {
    const { item } = outcome;
    if (item >= state.itemCount || done.has(item) || failed.has(item)) continue;
    if (!outcome.ok) {
      fail(item, outcome.reason);
      continue;
    }
    const partial = kind.partialSchema.safeParse(outcome.partial);
    if (!partial.success) {
      fail(item, "the worker's partial result is not valid for this task kind");
      continue;
    }
    aggregate = kind.merge(aggregate, partial.data);
    done.add(item);
    doneCount++;
  }
  if (doneCount === state.doneCount && failedCount === state.failedCount) return undefined;
  const complete = doneCount + failedCount === state.itemCount;
  return {
    ...state,
    doneBits: done.toBase64(),
    failedBits: failed.toBase64(),
    doneCount,
    failedCount,
    aggregate,
    failures,
    status: complete ? "completed" : state.status,
    ...(complete ? { completedAtMs: now } : {}),
  };
}

const key = (index: number): string => `group-${String(index).padStart(8, "0")}`;

/** A running job of `items` items whose aggregate holds `groups` groups, and a batch of results for its first items. */
function scenario(groups: number, results: number): { state: JobState; outcomes: ItemOutcome[] } {
  const items = results * 2;
  const aggregate: GroupByPartial = Array.from({ length: groups }, (_, index) => [key(index * 2), 3, "6000000", 1, 3]);
  const state: JobState = {
    v: 1,
    id: "bench",
    kind: "group-by",
    params: { format: "csv", keyField: "k", valueField: "v" },
    itemCount: items,
    chunkSize: 1000,
    createdAtMs: 0,
    registeredAtMs: 0,
    status: "running",
    dispatched: items,
    doneBits: Bitmap.empty(items).toBase64(),
    failedBits: Bitmap.empty(items).toBase64(),
    doneCount: 0,
    failedCount: 0,
    aggregate,
    failures: [],
    lastEpoch: 1,
  };
  // Each result: 8 groups, 4 the aggregate has (even keys) and 4 it does not (odd keys), spread over the key space.
  const outcomes: ItemOutcome[] = Array.from({ length: results }, (_, item) => {
    const partial: GroupByPartial = Array.from({ length: 8 }, (_, index) => {
      const slot = (item * 7919 + index * 104_729) % groups;
      return [key(slot * 2 + (index % 2)), 1, "2000000", 2, 2];
    });
    partial.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { item, ok: true, partial };
  });
  return { state, outcomes };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? 0) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

function timeMs(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

function main(): void {
  const args = parse(process.argv.slice(2));
  if (args === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const registry = new TaskRegistry().register(groupByKind);
  const deps = {
    registry,
    now: () => 1,
    maxAggregateGroups: Number.MAX_SAFE_INTEGER,
    maxJobDocumentBytes: Number.MAX_SAFE_INTEGER,
  };
  const rows = [];
  for (const groups of args.groups) {
    const { state, outcomes } = scenario(groups, args.results);
    const previous: number[] = [];
    const current: number[] = [];
    const document: number[] = [];
    let resultGroups = 0;
    let documentBytes = 0;
    for (let round = 0; round < args.rounds; round++) {
      let before: JobState | undefined;
      let after: JobState | undefined;
      previous.push(timeMs(() => (before = previousFold(state, outcomes, 1))));
      const counts: FoldCounts = { folded: 0, duplicates: 0, failed: 0 };
      current.push(timeMs(() => (after = foldOutcomes(deps, state, outcomes, counts))));
      if (JSON.stringify(before?.aggregate) !== JSON.stringify(after?.aggregate))
        throw new Error(`the two folds disagree at ${groups} groups`);
      resultGroups = (after?.aggregate as GroupByPartial | undefined)?.length ?? 0;
      document.push(timeMs(() => (documentBytes = JSON.stringify(JSON.parse(JSON.stringify(after))).length)));
    }
    const row = {
      groups,
      results: args.results,
      groupsAfter: resultGroups,
      previousFoldMs: Math.round(median(previous)),
      foldMs: Math.round(median(current)),
      speedup: Math.round((median(previous) / median(current)) * 10) / 10,
      documentRoundTripMs: Math.round(median(document)),
      documentBytes,
      rounds: {
        previousFoldMs: previous.map(Math.round),
        foldMs: current.map(Math.round),
        documentRoundTripMs: document.map(Math.round),
      },
    };
    rows.push(row);
    process.stdout.write(
      `${String(groups).padStart(9)} groups, ${args.results} results: before ${String(row.previousFoldMs).padStart(6)} ms | now ${String(row.foldMs).padStart(5)} ms | ${row.speedup}x | job document parse+serialize ${row.documentRoundTripMs} ms (${(documentBytes / 1e6).toFixed(1)} MB)\n`,
    );
  }
  // The machine's load: on a shared machine every figure stretches with it (the ratio much less).
  const machine = { cpus: availableParallelism(), loadAverage1m: Math.round((loadavg()[0] ?? 0) * 10) / 10 };
  const report = { benchmark: "fold", node: process.version, machine, rounds: args.rounds, medianOf: "rounds", rows };
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`Wrote ${args.out} (${machine.cpus} CPUs, load average ${machine.loadAverage1m} at the end)\n`);
}

try {
  main();
} catch (error) {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n\n${USAGE}\n`);
  process.exitCode = 2;
}
