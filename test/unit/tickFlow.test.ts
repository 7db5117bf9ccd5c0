/**
 * A tick's data flows one way (issue 25): a call that goes down into a module comes back into a module above it only
 * where that is the point of the call — each such return is listed below with why it stays. Measured by
 * `npm run trace:tick` (scripts/verification/tickFlow.ts), which runs a job through ticks in memory and reads the
 * module path at every call into an export of src/.
 */
import { spawnSync } from "node:child_process";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(__dirname, "..", "..");

/** The returns a tick keeps, "re-entered ← entered from", each with the reason it is not data passed back up. */
const KEPT: Record<string, string> = {
  "library/leadership/runTerm ← library/util/timeout":
    "withTimeout runs the request it is given under a deadline: a combinator, its argument is the work itself",
  "coordination/state/termHistory ← library/fencing/FencedStateStore":
    "a fenced read-modify-write re-runs the caller's change on a conflict (FencedStateStore.update, public API)",
  "coordination/fold/applyOutcomes ← coordination/state/jobStore":
    "the job store's read-modify-write re-runs the fold's change on a conflict (JobStore.update), as above",
};

interface Flow {
  modules: string[];
  returns: { into: string; from: string; path: string[] }[];
}

function traceTick(): Flow {
  const result = spawnSync(
    process.execPath,
    ["--import", "tsx", join(ROOT, "scripts", "verification", "tickFlow.ts"), "--json"],
    { cwd: ROOT, encoding: "utf8", timeout: 120_000 },
  );
  expect(result.stderr).toBe("");
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as Flow;
}

describe("a coordinator tick's flow through src/", () => {
  it("comes back into a module it went down from only where the call is the point (the kept returns)", () => {
    const flow = traceTick();
    // The trace saw the whole tick: the elector, the term, the step and its folding, dispatch and job store.
    expect(flow.modules).toEqual(
      expect.arrayContaining([
        "app/operations",
        "library/leadership/LeaderElector",
        "app/leaderStep",
        "library/leadership/runTerm",
        "coordination/step/step",
        "coordination/fold/foldResultBatch",
        "coordination/dispatch/dispatch",
        "coordination/state/jobStore",
      ]),
    );
    const returns = flow.returns.map(({ into, from }) => `${into} ← ${from}`);
    const unexplained = flow.returns
      .filter(({ into, from }) => KEPT[`${into} ← ${from}`] === undefined)
      .map(({ path }) => path.join(" → "));
    expect(unexplained).toEqual([]);
    // Each kept return is still there: the list says what the code does, not what it once did.
    expect(returns.sort()).toEqual(Object.keys(KEPT).sort());
  });
});
