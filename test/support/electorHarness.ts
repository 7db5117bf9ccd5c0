import { LeaderElector, type LeaderTask } from "../../src/leadership/LeaderElector";
import type { LeaderElectorOptions } from "../../src/leadership/options";
import type { Clock } from "../../src/util/clock";
import { delay } from "../../src/util/delay";
import type { FakeLeaseStore } from "./FakeLeaseStore";
import type { Recorder } from "./recorder";

/** Both clocks on `Date.now()`, which vitest's fake timers drive. */
export const fakeClock: Clock = { monotonicMs: () => Date.now(), wallMs: () => Date.now() };

/** An elector on the fake store with fake-timer clocks, no jitter, and the recorder's logger and events. */
export function fakeElector(store: FakeLeaseStore, recorder: Recorder, overrides: Partial<LeaderElectorOptions> = {}): LeaderElector {
  return new LeaderElector({
    store,
    instanceId: overrides.instanceId ?? "unit-a",
    clock: fakeClock,
    logger: recorder.logger,
    onEvent: recorder.onEvent,
    random: () => 0.5,
    ...overrides,
  });
}

/** A task that runs until its signal fires, then rejects with the signal's reason. */
export const untilAborted: LeaderTask<never> = (term) => delay(24 * 3600_000, { abortSignal: term.signal }) as Promise<never>;
