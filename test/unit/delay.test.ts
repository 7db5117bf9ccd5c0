import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortError, StorageError } from "../../src/library/errors";
import { delay, withJitter } from "../../src/library/util/delay";
import { withTimeout } from "../../src/library/util/timeout";

describe("delay and withTimeout (unit, fake timers)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("delay resolves after the time and leaves no timer behind", async () => {
    const done = delay(1000);
    await vi.advanceTimersByTimeAsync(1000);
    await expect(done).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("delay rejects at once with the signal's reason when already aborted", async () => {
    const reason = new Error("already");
    await expect(delay(1000, { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("delay aborted mid-wait rejects with an AbortError when the reason is not an Error, and clears its timer", async () => {
    const controller = new AbortController();
    const waiting = delay(10_000, { abortSignal: controller.signal });
    controller.abort("not an error");
    await expect(waiting).rejects.toBeInstanceOf(AbortError);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("withTimeout fails with StorageError('Timeout') when the operation outlasts it, and aborts the operation", async () => {
    let operationSignal: AbortSignal | undefined;
    const result = withTimeout(500, (signal) => {
      operationSignal = signal;
      return delay(10_000, { abortSignal: signal });
    });
    const assertion = expect(result).rejects.toMatchObject({ name: "StorageError", code: "Timeout" });
    await vi.advanceTimersByTimeAsync(500);
    await assertion;
    expect(operationSignal?.aborted).toBe(true);
    await expect(result).rejects.toBeInstanceOf(StorageError);
  });

  it("withTimeout passes the caller's abort through unchanged, already aborted and mid-call", async () => {
    const reason = new Error("caller stopped");
    await expect(withTimeout(500, () => Promise.resolve(1), { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(
      reason,
    );
    const controller = new AbortController();
    const result = withTimeout(5000, (signal) => delay(10_000, { abortSignal: signal }), {
      abortSignal: controller.signal,
    });
    controller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("withJitter spreads within ± the ratio", () => {
    expect(withJitter(1000, 0.2, () => 0)).toBe(800);
    expect(withJitter(1000, 0.2, () => 0.999999)).toBeCloseTo(1200, 0);
    expect(withJitter(1000, 0, () => 0.3)).toBe(1000);
  });
});
