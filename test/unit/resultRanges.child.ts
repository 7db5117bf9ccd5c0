// Run by resultRanges.test.ts in a child process with a small heap: one leader step over ONE small result message
// whose ranges name 10,000,001 items each.
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

async function main(): Promise<void> {
  const { deps, results, resultsPoison } = world();
  const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // registers and dispatches
  const ranges = Number(process.argv[2] ?? "1");
  const done = Array.from({ length: ranges }, () => [0, 10_000_000]);
  const garbage = JSON.stringify({ v: 2, jobId: id, first: 0, count: 1, done });
  await results.send([garbage]);
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  process.stdout.write(`message ${Buffer.byteLength(garbage)} bytes; results-poison ${resultsPoison.length}\n`);
}
void main();
