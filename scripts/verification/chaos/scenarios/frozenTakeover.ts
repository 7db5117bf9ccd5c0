import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { freezeStepWithJob, thawAfter } from "./faults";

/** How long the leader stays frozen: past its takeover deadline and a contender's wait, well short of its lease. */
const FREEZE_MS = 8_000;
/**
 * Extra time each worker invocation takes, so the round's job is still being worked on when its step is caught
 * 0.2–1.5 s in: unpaced, a job of 120 items can be dispatched and done within one short step (a run after the 10 s
 * tick and issue 21's passes failed "round 1: no leader was in a step to freeze").
 */
const WORKER_DELAY_MS = 1000;

/**
 * A leader frozen past its takeover deadline but not past its lease (issue 22): SIGSTOP mid-step for 8 s — its
 * heartbeats stop, and another instance that has seen its record unchanged for the takeover wait (3.1 s) breaks its
 * lease and takes over, while that lease would still have been valid for seconds — then SIGCONT, round after round (3
 * in full mode, 1 in quick). Checks, per round: a successor's term began while it was frozen, by a takeover (its
 * `lease-acquired` names who broke the lease) and before the frozen leader's lease could have expired; the frozen
 * leader's step ended aborted (never completed) after it woke — its monotonic clock ran on through SIGSTOP, so its
 * first check refuses; and, against the stored state, no version written with its epoch appeared after it woke. As in
 * every scenario, no write of an older epoch lands after a newer one, and no two steps overlap (a frozen step ends, at
 * the latest, the takeover deadline after the freeze).
 */
export function frozenTakeoverScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "frozen-leader-takeover",
    options,
    async (run) => {
      const { cluster } = run;
      const rounds = options.rounds ?? (options.quick ? 1 : 3);
      if (cluster.settings.LEASE_TAKEOVER_DEADLINE_MS <= 0) {
        run.fail("takeover is off (LEASE_TAKEOVER_DEADLINE_MS=0): this scenario needs it");
        return;
      }
      await run.startInstances("instance", 3);
      const figures: Record<string, unknown>[] = [];
      for (let round = 1; round <= rounds; round++) {
        const marker = cluster.records.length;
        const job = await run.jobs.submitDemo(`frozen-${round}`, 120, options.seed + round);
        // A step that has the job to work on (not any step: one without work ends within milliseconds).
        const caught = await freezeStepWithJob(run, job.id, marker);
        if (caught === undefined) {
          run.fail(`round ${round}: no leader was in a step to freeze`);
          continue;
        }
        const { instance: frozen, epoch, atMs: frozenAt } = caught;
        options.log(`  round ${round}: SIGSTOP ${frozen.id} in its step of epoch ${epoch} for ${FREEZE_MS / 1000} s`);
        // Its lease was renewed at most one renew interval before the freeze: it cannot expire sooner than this.
        const leaseValidUntilMs =
          frozenAt - cluster.settings.LEASE_RENEW_INTERVAL_MS + cluster.settings.LEASE_DURATION_SECONDS * 1000;
        const { successor, resumedAt, ended } = await thawAfter(run, caught, FREEZE_MS, marker, "the frozen leader");
        if (successor === undefined) run.fail(`round ${round}: no successor took over while ${frozen.id} was frozen`);
        else if (typeof successor.brokenBy !== "string")
          run.fail(`round ${round}: the successor of epoch ${epoch} did not take over by breaking its lease`);
        else if (Date.parse(successor.ts) >= leaseValidUntilMs)
          run.fail(`round ${round}: the successor came only when the frozen leader's lease could have expired`);
        if (ended === undefined)
          run.fail(`round ${round}: the frozen leader's step did not end within 15 s of SIGCONT`);
        else if (ended.type === "step-completed")
          run.fail(
            `round ${round}: the frozen leader's step (epoch ${epoch}) COMPLETED after waking instead of aborting`,
          );
        figures.push({
          round,
          frozen: frozen.id,
          epoch,
          frozenMs: resumedAt - frozenAt,
          successor: successor?.instance,
          successorEpoch: successor?.epoch,
          brokenBy: successor?.brokenBy,
          takeoverAfterFreezeMs: successor === undefined ? undefined : Date.parse(successor.ts) - frozenAt,
          frozenStepEnd:
            ended === undefined ? undefined : { type: ended.type, reason: ended.reason, detail: ended.detail },
        });
        await run.jobs.waitAllCompleted(run.completionTimeoutMs);
      }
      Object.assign(run.details, { rounds, freezeMs: FREEZE_MS, figures });
    },
    { LOCAL_INVOKE_DELAY_MS: `worker=${WORKER_DELAY_MS}` },
  );
}
