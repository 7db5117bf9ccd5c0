import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { startTestCluster } from "../../dev/src/testing/index";

const REPO = resolve(__dirname, "..", "..");

describe("startTestCluster (the testing entry)", () => {
  it("startTimeoutMs bounds the instances' start as well as Azurite's (issue 43: they waited a fixed 60 s)", async () => {
    const started = Date.now();
    await expect(
      startTestCluster({
        appEntry: resolve(__dirname, "fixtures", "neverReady.mjs"),
        projectDir: REPO,
        instances: 1,
        startTimeoutMs: 20_000,
      }),
    ).rejects.toThrow(/instance-1 did not start within 20000 ms/);
    // Reported, not asserted: how long the refusal took (Azurite's start, then the instances' 20 s).
    console.info(`startTestCluster gave up after ${Date.now() - started} ms`);
  }, 120_000);
});
