// Run by foldBatchMemory.test.ts in a child process with a small heap. A group-by job of N items, each naming an
// input blob with the same G distinct keys (say, a day's log file grouped by user id: the job's aggregate has only G
// groups, far below MAX_AGGREGATE_GROUPS). A real worker processes item 0; its unit's outcome is too large for a queue
// message, so it goes to an outcome blob. Every item's input is the same, so every worker's outcome is the same but
// for its `done` range: those are written for items 1..N-1 as their workers would. Then ONE leader step folds them.
// Storage content is kept in Buffers (off the V8 heap), so the heap holds only what the leader itself holds.
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { ONE_PASS, params, readJob, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

async function main(): Promise<void> {
  const items = Number(process.argv[2] ?? "128");
  const groups = Number(process.argv[3] ?? "20000");
  const { deps, work, results, state, system, inputs } = world({
    dispatchBatchSize: items,
    maxInFlight: items,
    workUnitMaxItems: 1,
  });
  const lines = Array.from({ length: groups }, (_, g) => JSON.stringify({ k: `user-${g}`, v: g })).join("\n");
  inputs.blobs.set("logs/day.ndjson", Buffer.from(lines));
  const { id } = await storeSubmission(deps.system, {
    kind: "group-by",
    params,
    items: Array.from({ length: items }, () => ({ blob: "logs/day.ndjson" })),
  });
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // registers and dispatches every item
  const [first] = await work.receive(1, 60);
  if (first === undefined) throw new Error("nothing dispatched");
  await processWorkMessage(deps, JSON.parse(first.rawText) as unknown, {
    id: first.id,
    dequeueCount: 1,
    maxDequeueCount: 5,
  });
  const outcome = JSON.parse((await system.readText(keys.outcome(id, 0))) ?? "null") as { partial: unknown };
  const partialJson = JSON.stringify(outcome.partial);
  system.blobs.set(
    keys.outcome(id, 0),
    Buffer.from(JSON.stringify({ done: [[0, 0]], partial: outcome.partial, failed: [] })),
  );
  for (let item = 1; item < items; item++) {
    system.blobs.set(
      keys.outcome(id, item),
      Buffer.from(`{"done":[[${item},${item}]],"partial":${partialJson},"failed":[]}`),
    );
    await results.send([
      JSON.stringify({ v: 2, jobId: id, first: item, count: 1, outcomeBlob: keys.outcome(id, item) }),
    ]);
  }
  const outcomeBytes = Buffer.byteLength(partialJson);
  global.gc?.();
  const before = process.memoryUsage().heapUsed;
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  const job = await readJob(state, id);
  process.stdout.write(
    `outcome ${(outcomeBytes / 1e6).toFixed(2)} MB each; heap before the step ${(before / 1e6).toFixed(0)} MB; job ${job?.status} done ${job?.doneCount}\n`,
  );
}
void main();
