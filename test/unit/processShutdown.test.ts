import { afterEach, describe, expect, it, vi } from "vitest";
import { ProcessShutdown } from "../../src/app/shutdown";
import { AbortError } from "../../src/library/errors";

describe("ProcessShutdown", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("fires its signal with an AbortError and waits for tracked work to settle", async () => {
    const shutdown = new ProcessShutdown();
    let finished = false;
    const work = shutdown.track(
      () =>
        new Promise<string>((resolve) => {
          shutdown.signal.addEventListener("abort", () => {
            setTimeout(() => {
              finished = true;
              resolve("released");
            }, 30);
          });
        }),
    );
    expect(shutdown.requested).toBe(false);
    expect(await shutdown.shutdown({ timeoutMs: 5_000 })).toBe(true);
    expect(finished).toBe(true);
    expect(shutdown.signal.reason).toBeInstanceOf(AbortError);
    expect(await work).toBe("released");
  });

  it("counts failed work as settled and no longer waits for work that already settled", async () => {
    const shutdown = new ProcessShutdown();
    await shutdown.track(() => Promise.resolve(1));
    await expect(shutdown.track(() => Promise.reject(new Error("tick failed")))).rejects.toThrow("tick failed");
    expect(await shutdown.shutdown({ timeoutMs: 10 })).toBe(true);
  });

  it("stops waiting after timeoutMs and says so", async () => {
    vi.useFakeTimers();
    const shutdown = new ProcessShutdown();
    void shutdown.track(() => new Promise<never>(() => undefined));
    const result = shutdown.shutdown({ timeoutMs: 2_000 });
    await vi.advanceTimersByTimeAsync(1_999);
    let settled = false;
    void result.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await result).toBe(false);
  });

  it("stops waiting when the caller's signal fires, already or mid-wait, but the shutdown signal has fired either way", async () => {
    const hanging = (shutdown: ProcessShutdown): void => void shutdown.track(() => new Promise<never>(() => undefined));
    const first = new ProcessShutdown();
    hanging(first);
    expect(await first.shutdown({ timeoutMs: 60_000, abortSignal: AbortSignal.abort() })).toBe(false);
    expect(first.signal.aborted).toBe(true);

    const second = new ProcessShutdown();
    hanging(second);
    const caller = new AbortController();
    const result = second.shutdown({ timeoutMs: 60_000, abortSignal: caller.signal });
    caller.abort();
    expect(await result).toBe(false);
    expect(second.requested).toBe(true);
  });
});
