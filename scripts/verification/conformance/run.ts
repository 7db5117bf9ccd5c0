import { cpus } from "node:os";
import type { Row } from "./rows";
import type { Scenario } from "./scenario";
import { buildSdkHost, pinnedPackages } from "./sdkHost";
import { World } from "./world";

/** One run of `conformance:host`: build the SDK's side, start one Azurite, run the scenarios, collect the rows. */

export interface RunOptions {
  scenarios: readonly Scenario[];
  quick: boolean;
  log: (line: string) => void;
}

export interface RunResult {
  rows: Row[];
  /** Scenario name → seconds it took (background scenarios overlap the others). */
  scenarioSeconds: Record<string, number>;
  build: { built: boolean; seconds: number };
  packages: Record<string, string>;
  /** What both sides see here: the default batch threshold depends on it. */
  processorCount: number;
  totalSeconds: number;
}

export async function runConformance(options: RunOptions): Promise<RunResult> {
  const startedMs = Date.now();
  const build = buildSdkHost(options.log);
  options.log(
    build.built
      ? `Built the WebJobs SDK host in ${build.seconds} s.`
      : "The WebJobs SDK host is built (inputs unchanged).",
  );
  const world = await World.start(build.dll);
  const rows: Row[] = [];
  const scenarioSeconds: Record<string, number> = {};
  const runOne = async (scenario: Scenario): Promise<void> => {
    const scenarioStartMs = Date.now();
    options.log(`  ${scenario.name} …`);
    try {
      rows.push(...(await scenario.run(world, { quick: options.quick, log: options.log })));
    } catch (error) {
      rows.push({
        id: `${scenario.name}.run`,
        claim: `the scenario ${scenario.name} runs on both sides`,
        sdk: null,
        local: null,
        verdict: "differs",
        why: `the scenario failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      });
    }
    scenarioSeconds[scenario.name] = Math.round((Date.now() - scenarioStartMs) / 100) / 10;
    options.log(`  ${scenario.name}: ${scenarioSeconds[scenario.name]} s`);
  };
  try {
    // One at a time (a scenario runs its two sides, and its parts, at once): timings stay those of a host that has
    // the machine to itself. The long message waits beside the others.
    const background = options.scenarios.filter((scenario) => scenario.background === true).map(runOne);
    for (const scenario of options.scenarios.filter((candidate) => candidate.background !== true))
      await runOne(scenario);
    await Promise.all(background);
  } finally {
    await world.close();
  }
  return {
    rows,
    scenarioSeconds,
    build: { built: build.built, seconds: build.seconds },
    packages: pinnedPackages(),
    processorCount: cpus().length,
    totalSeconds: Math.round((Date.now() - startedMs) / 100) / 10,
  };
}
