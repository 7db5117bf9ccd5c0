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
import { INVARIANTS, INVARIANT_NAMES, type InvariantName } from "../../test/sim/invariants";
import { FAULT_KINDS, type FaultKind } from "../../test/sim/plan";
import { describeFailure, replayCommand, runSeed } from "../../test/sim/simulator";
import { listFlag, numberFlag, parseFlags, pathFlag, UsageError } from "../../src/cli/flags";

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

async function main(): Promise<void> {
  const values = parseFlags(process.argv.slice(2), {
    runs: { type: "string" },
    seed: { type: "string" },
    out: { type: "string" },
    invariants: { type: "string" },
    faults: { type: "string" },
    "shrink-seconds": { type: "string" },
    trace: { type: "string" },
    quiet: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return;
  }
  const invariants = new Set<InvariantName>(
    listFlag(values.invariants, "--invariants", INVARIANT_NAMES) ?? INVARIANT_NAMES,
  );
  const faults = new Set<FaultKind>(listFlag(values.faults, "--faults", FAULT_KINDS) ?? FAULT_KINDS);
  const whole = { min: 0, max: Number.MAX_SAFE_INTEGER };
  const seed = numberFlag(values.seed, "--seed", whole) ?? Math.floor(Math.random() * 1_000_000);
  const runs = numberFlag(values.runs, "--runs", whole) ?? (values.seed !== undefined ? 1 : 100);
  const shrinkMs = (numberFlag(values["shrink-seconds"], "--shrink-seconds", whole) ?? 60) * 1000;
  const out = pathFlag(values.out, "--out");
  const trace = pathFlag(values.trace, "--trace");
  console.log(
    `Simulating ${runs} run(s) from seed ${seed}; invariants: ${[...invariants].join(", ")}; faults: ${[...faults].join(", ")}`,
  );
  const started = performance.now();
  const failing: number[] = [];
  const byInvariant = new Map<string, number>();
  let virtualS = 0;
  let requests = 0;
  let takeovers = 0;
  let runsWithTakeover = 0;
  const limited = { runs: 0, items: 0, waitingMs: 0, belowMs: 0, idleMs: 0, longestIdleMs: 0, longestSeed: 0 };
  for (let run = 0; run < runs; run++) {
    const outcome = await runSeed(seed + run, { invariants, faults }, shrinkMs);
    virtualS += outcome.stats?.virtualS ?? 0;
    requests += outcome.stats?.requests ?? 0;
    takeovers += outcome.stats?.takeovers ?? 0;
    if ((outcome.stats?.takeovers ?? 0) > 0) runsWithTakeover++;
    const limits = outcome.stats?.limits;
    if (limits !== undefined) {
      limited.runs++;
      limited.items += limits.items;
      limited.waitingMs += limits.waitingMs;
      limited.belowMs += limits.belowMs;
      limited.idleMs += limits.idleMs;
      if (limits.longestIdleMs > limited.longestIdleMs) {
        limited.longestIdleMs = limits.longestIdleMs;
        limited.longestSeed = outcome.seed;
      }
    }
    if (outcome.failed) {
      failing.push(outcome.seed);
      for (const name of new Set(outcome.violations.map((v) => v.invariant)))
        byInvariant.set(name, (byInvariant.get(name) ?? 0) + 1);
      if (outcome.crash !== undefined)
        byInvariant.set("(simulator error)", (byInvariant.get("(simulator error)") ?? 0) + 1);
      console.log(describeFailure(outcome, replayCommand(outcome.seed, { invariants, faults })));
      if (trace !== undefined && failing.length === 1) {
        writeFileSync(trace, `${outcome.interleaving.join("\n")}\n`);
        console.log(`  the whole interleaving is in ${trace}`);
      }
    }
    if (!values.quiet && ((run + 1) % 25 === 0 || run + 1 === runs)) {
      console.log(
        `  ${run + 1}/${runs} runs, ${failing.length} failing, ${((performance.now() - started) / 1000).toFixed(1)} s`,
      );
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `\n${runs} runs from seed ${seed} in ${seconds.toFixed(1)} s (${(virtualS / 3600).toFixed(1)} h simulated, ${requests} requests, ${takeovers} takeovers in ${runsWithTakeover} runs): ${failing.length} failing`,
  );
  if (limited.runs > 0) {
    const s = (ms: number): string => (ms / 1000).toFixed(0);
    console.log(
      `  limits (issue 42): ${limited.runs} runs with limits, ${limited.items} items started under them; while items waited (${s(limited.waitingMs)} s in all, summed over pools with a concurrency limit) a pool ran below its limit ${s(limited.belowMs)} s and none ${s(limited.idleMs)} s; longest stretch with none running ${s(limited.longestIdleMs)} s (seed ${limited.longestSeed})`,
    );
  }
  for (const [name, count] of byInvariant) console.log(`  ${name}: ${count} run(s)`);
  if (failing.length > 0) console.log(`  failing seeds: ${failing.join(", ")}`);
  if (out !== undefined) {
    writeFileSync(
      out,
      `${JSON.stringify({ runs, failures: failing.length, takeovers, runsWithTakeover, invariants: [...invariants], seeds: failing }, null, 2)}\n`,
    );
    console.log(`Wrote ${out}`);
  }
  process.exitCode = failing.length > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error(`\n${HELP}`);
  process.exitCode = 2;
});
