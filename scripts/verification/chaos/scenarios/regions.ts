import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { killLeaderMidStep, nextTermAfter } from "./faults";

const REGIONS = [
  { region: "eastus", prefix: "east", site: "coordinator-eastus" },
  { region: "westeurope", prefix: "west", site: "coordinator-westeurope" },
] as const;

/**
 * Two regions sharing one storage account: two runner groups with different REGION_NAME and app names
 * (WEBSITE_SITE_NAME), two instances each, one job per region; the leader is SIGKILLed mid-step (once in quick mode,
 * twice in full; each round submits its jobs and strikes a step that has one to work on) so leadership has to cross
 * groups. Checks: never two steps at once across both groups (the shared invariant), a leader again after each kill,
 * both jobs counted exactly once; reports the terms each region held.
 */
export function regionsScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "two-regions",
    options,
    async (run) => {
      const rounds = options.rounds ?? (options.quick ? 1 : 2);
      await Promise.all(
        REGIONS.map(({ region, prefix, site }) =>
          run.startInstances(prefix, 2, { REGION_NAME: region, WEBSITE_SITE_NAME: site }),
        ),
      );
      for (let round = 1; round <= rounds; round++) {
        // Each round's jobs (one per region) are submitted just before the kill, so a step has them to work on.
        const fromIndex = run.cluster.records.length;
        const jobs = [];
        for (const { region } of REGIONS)
          jobs.push(await run.jobs.submitDemo(`${region}-job-${round}`, 60, options.seed + region.length + round));
        const caught = await killLeaderMidStep(run, `round ${round}/${rounds}`, { id: jobs[0]?.id ?? "", fromIndex });
        if (caught === undefined) continue;
        if ((await nextTermAfter(run, caught.atMs, caught.instance.id)) === undefined)
          run.fail(`round ${round}: no new term within 30 s of the kill`);
      }
      run.afterJobs.push(() => {
        const terms = run.cluster.records.filter((record) => record.type === "lease-acquired");
        run.details.termsByRegion = Object.fromEntries(
          REGIONS.map(({ region }) => [
            region,
            terms.filter((record) => record.instance.startsWith(`${region}:`)).length,
          ]),
        );
        return Promise.resolve();
      });
      run.details.rounds = rounds;
    },
    { LOCAL_INVOKE_DELAY_MS: "worker=1000" },
  );
}
