/**
 * How one coordinator tick flows through `src/`'s modules (issue 25): which modules it passes, and where a call comes
 * back into a module it already went down from — a "return". It runs the README's kind of job in memory (a tick that
 * registers and dispatches, the workers, a tick that folds and completes), wraps every function and method `src/`
 * exports, and at each such call reads the call stack (async frames included) as a path of modules from the tick down.
 *
 *   npm run trace:tick                 # the modules and every return, with the path that shows it
 *   npm run trace:tick -- --json       # {"modules":[…],"returns":[{"into","from","path"}…]}
 *
 * A return is counted once per (module re-entered, module it was entered from) pair, however often it happens. Calls
 * inside one module, and calls into test support or Node, are not seen.
 */
// First: every module of src/ loaded after this one reports its calls.
import { analyse, recordedPaths, tracing } from "./tickFlowTrace";
import * as api from "../../src/app/operations";
import { GROUP_BY_CSV_JOB } from "../../test/support/csvJob";
import { drainWorkQueue } from "../../test/support/drainWork";
import { memoryApp } from "../../test/support/memoryApp";
import { parseFlags, UsageError } from "../../src/cli/flags";

const HELP = `Usage: npm run trace:tick -- [--json]

  --json   prints {"modules":[…],"returns":[{"into","from","path"}…]} instead of the text report
`;

async function main(): Promise<void> {
  const values = parseFlags(process.argv.slice(2), { json: { type: "boolean" }, help: { type: "boolean" } });
  if (values.help === true) {
    process.stdout.write(HELP);
    return;
  }
  const world = memoryApp();
  // Three CSV items of the built-in group-by kind, one of them failing.
  const submitted = await api.submitJob(world.app, GROUP_BY_CSV_JOB, { wake: false });
  if (!submitted.ok) throw new Error(`the job was refused: ${JSON.stringify(submitted.errors)}`);
  const { id } = submitted;
  for (let tick = 1; ; tick++) {
    const outcome = await tracing.run(true, () => api.runCoordinatorTick(world.app, world.sink));
    if (outcome !== "completed") throw new Error(`tick ${tick} ended ${outcome}`);
    if ((await api.getJobStatus(world.app, id))?.status === "completed") break;
    if (tick === 5) throw new Error("the job did not complete in 5 ticks");
    // The workers, outside the trace: every unit queued, handled once.
    while ((await drainWorkQueue(world.app, world.sink)) > 0) {
      // until the queue is empty
    }
  }
  const result = analyse(recordedPaths());
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  process.stdout.write(`A tick passes ${result.modules.length} modules of src/:\n  ${result.modules.join("\n  ")}\n\n`);
  process.stdout.write(`It comes back into a module it went down from ${result.returns.length} times:\n`);
  for (const entry of result.returns) {
    process.stdout.write(`  ${entry.into} ← ${entry.from}\n      ${entry.path.join(" → ")}\n`);
  }
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n\n${HELP}`);
    process.exit(2);
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
