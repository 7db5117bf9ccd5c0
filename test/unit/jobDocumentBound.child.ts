// Run by jobDocumentBound.test.ts in a child process with a small heap: the review's job (issue 21, item 1). 140
// items, each unit's outcome blob holding one group whose key has 4,000,000 characters (written by a worker that did
// not bound its keys: an earlier version, or a kind of the user's). One leader step folds them all. The outcome blobs
// share one Buffer of "x" (off the V8 heap), so the heap holds only what the leader itself builds.
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

const ITEMS = 140;
const KEY_LENGTH = 4_000_000;

async function main(): Promise<void> {
  const made = world({ dispatchBatchSize: ITEMS, maxInFlight: ITEMS, workUnitMaxItems: 1 });
  const { deps, results, state, system } = made;
  const { id } = await storeSubmission(deps.system, {
    kind: "group-by",
    params,
    items: Array.from({ length: ITEMS }, (_, n) => item("a", n)),
  });
  for (let pass = 0; pass < 10 && made.work.length < ITEMS; pass++)
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  const tail = Buffer.alloc(KEY_LENGTH - 8, "x");
  const open = system.open.bind(system);
  system.open = async (name) => {
    const match = /\/outcomes\/(\d+)\.json$/.exec(name);
    if (match === null) return open(name);
    const n = match[1] ?? "0";
    const head = Buffer.from(`{"done":[[${n},${n}]],"partial":[["${n.padStart(8, "0")}`);
    const foot = Buffer.from(`",1,"1000000",1,1]],"failed":[]}`);
    async function* content(): AsyncGenerator<Uint8Array> {
      yield head;
      await Promise.resolve();
      yield tail;
      yield foot;
    }
    return { sizeBytes: head.length + tail.length + foot.length, content: content(), close: () => undefined };
  };
  for (let n = 0; n < ITEMS; n++)
    await results.send([JSON.stringify({ v: 2, jobId: id, first: n, count: 1, outcomeBlob: keys.outcome(id, n) })]);
  for (let pass = 0; pass < 5 && results.length > 0; pass++) await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  const stored = await state.read(keys.jobState(id));
  const job = stored?.value as { status: string; doneCount: number; failureReason?: string } | undefined;
  const bytes = Buffer.byteLength(JSON.stringify(stored?.value));
  process.stdout.write(
    `job ${job?.status} done ${job?.doneCount} document ${bytes} bytes results left ${results.length}\n${job?.failureReason ?? ""}\n`,
  );
}
void main();
