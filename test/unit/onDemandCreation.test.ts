import { describe, expect, it } from "vitest";
import { OnDemandCreation } from "../../src/azure/OnDemandCreation";

describe("OnDemandCreation", () => {
  it("shares the creation in flight between concurrent callers, and forgets it once finished", async () => {
    let calls = 0;
    const creation = new OnDemandCreation(() => {
      calls++;
      return Promise.resolve();
    });
    await Promise.all([creation.ensure(), creation.ensure(), creation.ensure()]);
    expect(calls).toBe(1);
    await creation.ensure(); // e.g. the container was deleted since: created again
    expect(calls).toBe(2);
  });

  it("does not cache a failed creation: the next caller tries again", async () => {
    let calls = 0;
    const creation = new OnDemandCreation(() => (++calls === 1 ? Promise.reject(new Error("503 (simulated)")) : Promise.resolve("created")));
    await expect(creation.ensure()).rejects.toThrow("503 (simulated)");
    await expect(creation.ensure()).resolves.toBe("created");
    expect(calls).toBe(2);
  });

  it("passes the caller's abort signal to the creation", async () => {
    let seen: AbortSignal | undefined;
    const creation = new OnDemandCreation((options) => {
      seen = options.abortSignal;
      return Promise.resolve();
    });
    const signal = new AbortController().signal;
    await creation.ensure({ abortSignal: signal });
    expect(seen).toBe(signal);
  });
});
