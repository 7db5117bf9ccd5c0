import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { EventRecord } from "../../../dev/src/local/eventLog";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";

/**
 * `npm run bench:blocking`: what a task kind that holds the event loop does to leadership (issue 37). For each block
 * length, with takeover on (the app's default) and off (`LEASE_TAKEOVER_DEADLINE_MS=0`), one run of `npm run local`
 * — 3 instances of one app, the demo job in units of one item — with the app of `blocking/app.ts`, whose kind holds
 * the thread for the block length per item. From each run's event log: steps started and aborted (by reason), terms
 * lost (by reason), leader changes, takeovers by break, items reported as holding the loop, and the job's time from
 * registration to completion. The local host is used only through its command line and its event log.
 */

const USAGE = `Usage: npm run bench:blocking -- [--blocks MS,MS,...] [--items N] [--rounds N] [--out FILE]
  --blocks  how long each item holds the event loop, in ms (default 1000,3000,5000; each 0–20000)
  --items   items of the job, one per work unit (default 12; 1–200)
  --rounds  rounds of every block length and mode (default 1; 1–5)
  --out     JSON report (default bench-results/blocking.json)`;

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
const APP_ENTRY = join(__dirname, "blocking", "app.ts");

/** One run's figures. */
interface RunFigures {
  blockMs: number;
  takeover: boolean;
  round: number;
  /** The runner's exit code: 0 when the job completed with the expected aggregate. */
  exitCode: number | null;
  /** From the job's registration to its completion, in s; null when it did not complete. */
  jobSeconds: number | null;
  stepsStarted: number;
  stepsAborted: number;
  abortReasons: Record<string, number>;
  termsLost: Record<string, number>;
  /** Terms begun by another instance than the previous term's holder. */
  leaderChanges: number;
  takeoversByBreak: number;
  itemsHeldLoop: number;
}

async function main(argv: string[]): Promise<void> {
  const flags = parseFlags(argv, {
    blocks: { type: "string" },
    items: { type: "string" },
    rounds: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean" },
  });
  if (flags.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const blocks = (flags.blocks ?? "1000,3000,5000")
    .split(",")
    .map((part) => numberFlag(part.trim(), "--blocks", { min: 0, max: 20_000 }) ?? 0);
  const items = numberFlag(flags.items, "--items", { min: 1, max: 200 }) ?? 12;
  const rounds = numberFlag(flags.rounds, "--rounds", { min: 1, max: 5 }) ?? 1;
  const out = pathFlag(flags.out, "--out") ?? join(REPO_ROOT, "bench-results", "blocking.json");
  const workDir = join(dirname(out), "blocking-runs");
  mkdirSync(workDir, { recursive: true });
  const startedAt = new Date().toISOString();
  const runs: RunFigures[] = [];
  for (let round = 1; round <= rounds; round++)
    for (const blockMs of blocks)
      for (const takeover of [true, false]) {
        const eventsPath = join(workDir, `block-${blockMs}-${takeover ? "takeover" : "no-takeover"}-${round}.jsonl`);
        const exitCode = await runLocal({ blockMs, takeover, items, eventsPath, workDir });
        const figures = { blockMs, takeover, round, exitCode, ...figuresOf(readEvents(eventsPath)) };
        runs.push(figures);
        process.stdout.write(`${line(figures)}\n`);
      }
  writeFileSync(
    out,
    `${JSON.stringify({ startedAt, items, rounds, instances: 3, unitItems: 1, blocks, runs }, null, 2)}\n`,
  );
  process.stdout.write(`Report: ${out}\n`);
}

/** Runs `npm run local` once with the blocking app; resolves with its exit code. */
function runLocal(run: {
  blockMs: number;
  takeover: boolean;
  items: number;
  eventsPath: string;
  workDir: string;
}): Promise<number | null> {
  const args = [
    "tsx",
    join(REPO_ROOT, "scripts", "tools", "local.ts"),
    "--instances",
    "3",
    "--items",
    String(run.items),
    "--events",
    run.eventsPath,
    "--timeline",
    run.eventsPath.replace(/\.jsonl$/, ".svg"),
  ];
  const env = {
    ...process.env,
    LOCAL_APP_ENTRY: APP_ENTRY,
    BENCH_BLOCK_MS: String(run.blockMs),
    WORK_UNIT_MAX_ITEMS: "1",
    LEASE_TAKEOVER_DEADLINE_MS: run.takeover ? "2500" : "0",
  };
  const child = spawn("npx", args, { cwd: REPO_ROOT, env, stdio: ["ignore", "ignore", "inherit"] });
  return new Promise((resolveExit, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => resolveExit(code));
  });
}

function readEvents(path: string): EventRecord[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((text) => text.trim() !== "")
    .map((text) => JSON.parse(text) as EventRecord);
}

/** The figures of one run's event log. */
function figuresOf(records: readonly EventRecord[]): Omit<RunFigures, "blockMs" | "takeover" | "round" | "exitCode"> {
  const of = (type: string): EventRecord[] => records.filter((record) => record.type === type);
  const count = (list: readonly EventRecord[], field: string): Record<string, number> => {
    const counts: Record<string, number> = {};
    for (const record of list) {
      const key = String(record[field]);
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return counts;
  };
  const registered = of("job-registered")[0];
  const completed = of("job-completed")[0];
  const acquired = of("lease-acquired");
  return {
    jobSeconds:
      registered === undefined || completed === undefined
        ? null
        : (Date.parse(completed.ts) - Date.parse(registered.ts)) / 1000,
    stepsStarted: of("step-started").length,
    stepsAborted: of("step-aborted").length,
    abortReasons: count(of("step-aborted"), "reason"),
    termsLost: count(of("lease-lost"), "reason"),
    leaderChanges: acquired.filter(
      (record) => typeof record.previousHolder === "string" && ![record.instance, ""].includes(record.previousHolder),
    ).length,
    takeoversByBreak: acquired.filter((record) => typeof record.brokenBy === "string" && record.brokenBy !== "").length,
    itemsHeldLoop: of("item-held-event-loop").length,
  };
}

function line(figures: RunFigures): string {
  const mode = figures.takeover ? "takeover on " : "takeover off";
  const job = figures.jobSeconds === null ? "did not complete" : `${figures.jobSeconds.toFixed(1)} s`;
  return `block ${String(figures.blockMs).padStart(5)} ms, ${mode}: job ${job}; steps ${figures.stepsStarted}, aborted ${figures.stepsAborted} ${JSON.stringify(figures.abortReasons)}; terms lost ${JSON.stringify(figures.termsLost)}; leader changes ${figures.leaderChanges}, by break ${figures.takeoversByBreak}; items reported holding the loop ${figures.itemsHeldLoop}; runner exit ${String(figures.exitCode)}`;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
