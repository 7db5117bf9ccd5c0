/**
 * Deterministic simulation of leadership and coordination (issue 8): the real LeaderElector, FencedStateStore,
 * coordination step and worker over a simulated Azure Storage, with fast-check picking every interleaving and the
 * faults. Each run is one seed; a failing seed replays exactly with `--seed`.
 *
 *   npm run simulate -- --runs 200
 *   npm run simulate -- --seed 2031                       # replay one seed (and shrink it again)
 *   npm run simulate -- --runs 500 --seed 7000 --faults freeze,crash --invariants everyJobEnds --out sim.json
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { INVARIANTS, INVARIANT_NAMES, type InvariantName } from "../test/sim/invariants";
import { FAULT_KINDS, type FaultKind } from "../test/sim/plan";
import { describeFailure, replayCommand, runSeed } from "../test/sim/simulator";

const HELP = `Usage: npm run simulate -- [--runs N] [--seed S] [--out FILE] [--invariants a,b] [--faults x,y] [--shrink-seconds T] [--trace FILE] [--quiet]

  --runs N            runs to make, seeds S, S+1, … (default 100; 1 when --seed is given alone)
  --seed S            first seed (default: drawn at random and printed)
  --out FILE          writes {"runs","failures","invariants":[…],"seeds":[…]} (seeds: the failing ones)
  --invariants a,b    check only these (default: all)
  --faults x,y        inject only these faults (default: all)
  --shrink-seconds T  real time fast-check may spend shrinking one failure (default 60)
  --trace FILE        writes the whole shrunk interleaving of the first failure
  --quiet             no progress lines

Invariants:
${INVARIANT_NAMES.map((name) => `  ${name.padEnd(32)}${INVARIANTS[name]}`).join("\n")}
Faults: ${FAULT_KINDS.join(", ")}
`;

function list<T extends string>(value: string | undefined, allowed: readonly T[], what: string): Set<T> {
  if (value === undefined) return new Set(allowed);
  const names = value.split(",").map((name) => name.trim()).filter((name) => name !== "");
  const unknown = names.filter((name) => !allowed.includes(name as T));
  if (unknown.length > 0) throw new Error(`Unknown ${what}: ${unknown.join(", ")}. Allowed: ${allowed.join(", ")}.`);
  return new Set(names as T[]);
}

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < 0) throw new Error(`--${name} must be a whole number ≥ 0, got ${JSON.stringify(value)}.`);
  return parsed;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      runs: { type: "string" },
      seed: { type: "string" },
      out: { type: "string" },
      invariants: { type: "string" },
      faults: { type: "string" },
      "shrink-seconds": { type: "string" },
      trace: { type: "string" },
      quiet: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const invariants = list<InvariantName>(values.invariants, INVARIANT_NAMES, "invariant");
  const faults = list<FaultKind>(values.faults, FAULT_KINDS, "fault");
  const seed = integer(values.seed, "seed", Math.floor(Math.random() * 1_000_000));
  const runs = integer(values.runs, "runs", values.seed !== undefined ? 1 : 100);
  const shrinkMs = integer(values["shrink-seconds"], "shrink-seconds", 60) * 1000;
  console.log(`Simulating ${runs} run(s) from seed ${seed}; invariants: ${[...invariants].join(", ")}; faults: ${[...faults].join(", ")}`);
  const started = performance.now();
  const failing: number[] = [];
  const byInvariant = new Map<string, number>();
  let virtualS = 0;
  let requests = 0;
  for (let run = 0; run < runs; run++) {
    const outcome = await runSeed(seed + run, { invariants, faults }, shrinkMs);
    virtualS += outcome.stats?.virtualS ?? 0;
    requests += outcome.stats?.requests ?? 0;
    if (outcome.failed) {
      failing.push(outcome.seed);
      for (const name of new Set(outcome.violations.map((v) => v.invariant))) byInvariant.set(name, (byInvariant.get(name) ?? 0) + 1);
      if (outcome.crash !== undefined) byInvariant.set("(simulator error)", (byInvariant.get("(simulator error)") ?? 0) + 1);
      console.log(describeFailure(outcome, replayCommand(outcome.seed, { invariants, faults })));
      if (values.trace !== undefined && failing.length === 1) {
        writeFileSync(values.trace, `${outcome.interleaving.join("\n")}\n`);
        console.log(`  the whole interleaving is in ${values.trace}`);
      }
    }
    if (!values.quiet && ((run + 1) % 25 === 0 || run + 1 === runs)) {
      console.log(`  ${run + 1}/${runs} runs, ${failing.length} failing, ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(`\n${runs} runs from seed ${seed} in ${seconds.toFixed(1)} s (${(virtualS / 3600).toFixed(1)} h simulated, ${requests} requests): ${failing.length} failing`);
  for (const [name, count] of byInvariant) console.log(`  ${name}: ${count} run(s)`);
  if (failing.length > 0) console.log(`  failing seeds: ${failing.join(", ")}`);
  if (values.out !== undefined) {
    writeFileSync(values.out, `${JSON.stringify({ runs, failures: failing.length, invariants: [...invariants], seeds: failing }, null, 2)}\n`);
    console.log(`Wrote ${values.out}`);
  }
  process.exitCode = failing.length > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 2;
});
