import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";

/**
 * bench:throughput's leak check (issue 46) on a real process: the preload `heapSampler.ts`, loaded with `--expose-gc`
 * as the bench starts each instance, notes the live heap after a full collection on each SIGUSR2.
 */

const SAMPLER = resolve(__dirname, "../../scripts/verification/bench/throughput/heapSampler.ts");
const TSX = createRequire(__filename).resolve("tsx");

let dir: string | undefined;
afterEach(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/** A process with the preload that holds `holdMiB` of live objects, signalled `signals` times; its samples. */
async function sampled(holdMiB: number, signals: number): Promise<{ heapUsedBytes: number; rssBytes: number }[]> {
  dir = mkdtempSync(join(tmpdir(), "heap-sampler-"));
  const file = join(dir, "samples.jsonl");
  const script = `globalThis.kept = Array.from({ length: ${holdMiB} }, () => new Array(131072).fill(1.5)); process.stdout.write("ready\\n"); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ["--expose-gc", "--import", TSX, "--import", SAMPLER, "-e", script], {
    env: { ...process.env, LOCAL_HEAP_SAMPLES_FILE: file },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    await new Promise<void>((done, fail) => {
      child.stdout.on("data", (chunk: Buffer) => {
        if (chunk.toString().includes("ready")) done();
      });
      child.on("exit", (code) => fail(new Error(`the process exited (${String(code)}) before it was ready`)));
    });
    for (let signal = 1; signal <= signals; signal++) {
      child.kill("SIGUSR2");
      // Each signal appends one line: wait for it, not for a fixed time.
      const deadline = Date.now() + 15_000;
      while (!existsSync(file) || readFileSync(file, "utf8").split("\n").filter(Boolean).length < signal) {
        if (Date.now() > deadline) throw new Error(`no sample ${signal} in ${file} 15 s after SIGUSR2`);
        await new Promise((next) => setTimeout(next, 20));
      }
    }
    return readFileSync(file, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { heapUsedBytes: number; rssBytes: number });
  } finally {
    child.kill("SIGKILL");
  }
}

describe("bench:throughput's heap sampler (issue 46)", () => {
  it("notes one sample per signal with the live heap (what the process holds) and its RSS", async () => {
    const samples = await sampled(64, 2);
    expect(samples).toHaveLength(2);
    // 64 arrays of 131,072 doubles: 64 MiB live, which a full collection cannot free.
    for (const sample of samples) {
      expect(sample.heapUsedBytes).toBeGreaterThan(64 * 1024 * 1024);
      expect(sample.rssBytes).toBeGreaterThan(sample.heapUsedBytes);
    }
    const small = await sampled(0, 1);
    expect(small[0]?.heapUsedBytes).toBeLessThan(32 * 1024 * 1024);
  }, 60_000);
});
