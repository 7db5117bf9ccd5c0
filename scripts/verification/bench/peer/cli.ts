import { listFlag, numberFlag, parseFlags, pathFlag, UsageError } from "../../../../src/cli/flags";
import { SCENARIOS, type ScenarioName } from "../throughput/scenarios";

/** The command line of `npm run bench:peer`, parsed and validated up front. */

export interface PeerArgs {
  help: boolean;
  out: string;
  rounds: number;
  smallItems: number;
  blobItems: number;
  shortItems: number;
  scenarios: ScenarioName[];
  instances: number;
  partitions: number;
  perItemMaxItems: number;
  settleS: number;
  /** Only the project's side: no framework run, no ratios (to read the project's requests while working on them). */
  projectOnly: boolean;
}

export { UsageError };

export const USAGE = `Usage: npm run bench:peer -- [flags]

The project against the real Durable Task Framework (DurableTask.Core 3.11.2 with its Azure Storage provider 2.11.2,
the engine and default backend under Durable Functions) on one Azurite, in one run: bench:throughput's scenarios —
small (inline items of about 100 bytes of CSV), blob (one input blob per item), short (a short job of small items) —
through the app (instance processes of the local host) and through the framework (as many worker processes, one
orchestration fanning out one activity per item, and one per unit of the app's unit size), who goes first
alternating by round. Every storage request of both sides is counted by one counting proxy in front of Azurite
(blob, queue and table). Restores and builds the .NET harness (scripts/verification/bench/peer/dotnet) with dotnet.
Prints tables, writes JSON.

  --out FILE                JSON report (default bench-results/peer.json)
  --rounds N                rounds, 1–10 (default 3)
  --small-items N           items of the small scenario, 100–200000 (default 20000)
  --blob-items N            items of the blob scenario, 10–20000 (default 2000)
  --short-items N           items of the short scenario, 10–5000 (default 200)
  --scenarios LIST          which scenarios, comma-separated, of ${SCENARIOS.join(", ")} (default all)
  --instances N             app instances and framework workers, 1–8 (default 3)
  --partitions N            the framework's partition count, 1–16 (default 4, its default)
  --per-item-max-items N    run the framework's one-activity-per-item variant only on scenarios of at most N items,
                            0–200000 (default 2000: it runs at a few items a second here)
  --settle-s N              seconds the framework's workers run before the orchestration starts, so they own their
                            partitions as the app's ready instances own theirs, 0–120 (default 15)
  --project-only            run only the project's side (no .NET build, no framework, no ratios): its figures and
                            requests by operation, to work on them; the targets need both sides
  --help                    show this text`;

/** @throws UsageError naming the flag and the allowed values. */
export function parsePeerArgs(argv: readonly string[]): PeerArgs {
  const values = parseFlags(argv, {
    out: { type: "string" },
    rounds: { type: "string" },
    "small-items": { type: "string" },
    "blob-items": { type: "string" },
    "short-items": { type: "string" },
    scenarios: { type: "string" },
    instances: { type: "string" },
    partitions: { type: "string" },
    "per-item-max-items": { type: "string" },
    "settle-s": { type: "string" },
    "project-only": { type: "boolean" },
    help: { type: "boolean" },
  });
  return {
    help: values.help === true,
    out: pathFlag(values.out, "--out") ?? "bench-results/peer.json",
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 10 }) ?? 3,
    smallItems: numberFlag(values["small-items"], "--small-items", { min: 100, max: 200_000 }) ?? 20_000,
    blobItems: numberFlag(values["blob-items"], "--blob-items", { min: 10, max: 20_000 }) ?? 2000,
    shortItems: numberFlag(values["short-items"], "--short-items", { min: 10, max: 5000 }) ?? 200,
    scenarios: listFlag(values.scenarios, "--scenarios", SCENARIOS) ?? [...SCENARIOS],
    instances: numberFlag(values.instances, "--instances", { min: 1, max: 8 }) ?? 3,
    partitions: numberFlag(values.partitions, "--partitions", { min: 1, max: 16 }) ?? 4,
    perItemMaxItems: numberFlag(values["per-item-max-items"], "--per-item-max-items", { min: 0, max: 200_000 }) ?? 2000,
    settleS: numberFlag(values["settle-s"], "--settle-s", { min: 0, max: 120 }) ?? 15,
    projectOnly: values["project-only"] === true,
  };
}
