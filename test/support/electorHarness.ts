import { afterEach, beforeEach, vi } from "vitest";
import { LeaderElector, type LeaderTask } from "../../src/library/leadership/LeaderElector";
import type { LeaderElectorOptions } from "../../src/library/leadership/options";
import type { Clock } from "../../src/library/util/clock";
import { delay } from "../../src/library/util/delay";
import { FakeLeaseStore } from "./FakeLeaseStore";
import { Recorder } from "./recorder";

/** Both clocks on `Date.now()`, which vitest's fake timers drive. */
export const fakeClock: Clock = { monotonicMs: () => Date.now(), wallMs: () => Date.now() };

/** An elector on the fake store with fake-timer clocks, no jitter, and the recorder's logger and events. */
export function fakeElector(
  store: FakeLeaseStore,
  recorder: Recorder,
  overrides: Partial<LeaderElectorOptions> = {},
): LeaderElector {
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
export const untilAborted: LeaderTask<never> = (term) =>
  delay(24 * 3600_000, { abortSignal: term.signal }) as Promise<never>;

/** What each test of a {@link useFakeLeaseWorld} block gets afresh. */
export interface FakeLeaseWorld {
  readonly store: FakeLeaseStore;
  readonly recorder: Recorder;
}

/** Fake timers, a fresh fake lease store and a fresh recorder for every test of the calling `describe` block. */
export function useFakeLeaseWorld(): FakeLeaseWorld {
  let current: FakeLeaseWorld | undefined;
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
    current = { store: new FakeLeaseStore(), recorder: new Recorder() };
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const get = (): FakeLeaseWorld => {
    if (current === undefined) throw new Error("useFakeLeaseWorld() must be called at the top of a describe block.");
    return current;
  };
  return {
    get store() {
      return get().store;
    },
    get recorder() {
      return get().recorder;
    },
  };
}
