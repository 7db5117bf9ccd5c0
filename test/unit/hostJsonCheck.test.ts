import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkHostJson, checkHostJsonFile, describeHostJsonFindings } from "../../src/app/hostJsonCheck";

/**
 * host.json settings the coordinator relies on (docs/HOST-JSON.md): a host.json that lacks them, or sets them against
 * the coordinator, is named with what it costs — `local` prints it at start, and so does the app.
 */

const REPO_HOST_JSON = join(__dirname, "..", "..", "host.json");

/** One processor, not a Dynamic SKU: the default newBatchThreshold is batchSize / 2, as on a 1-core instance. */
const ONE_CORE = { processorCount: 1 };

function settingsOf(queues: Record<string, unknown>): string[] {
  return checkHostJson({ version: "2.0", extensions: { queues } }, ONE_CORE).map((finding) => finding.setting);
}

describe("host.json check", () => {
  it("finds nothing to say about this repository's host.json, nor the consumer app's", () => {
    expect(checkHostJsonFile(REPO_HOST_JSON)).toEqual([]);
    expect(checkHostJsonFile(join(__dirname, "..", "consumer", "app", "host.json"))).toEqual([]);
  });

  it("names a missing maxPollingInterval and what it costs: jobs starting up to a minute late", () => {
    const findings = checkHostJson({ version: "2.0" });
    const polling = findings.find((finding) => finding.setting === "extensions.queues.maxPollingInterval");
    expect(polling?.problem).toBe("not set: the Functions host's default is 1 minute");
    expect(polling?.cost).toMatch(/a job submitted to an idle app can start up to a minute late/);
    expect(polling?.fix).toBe('"maxPollingInterval": "00:00:02"');
  });

  it("names a polling interval longer than a few seconds, with the delay it allows", () => {
    const findings = checkHostJson(
      { extensions: { queues: { maxPollingInterval: "00:00:30", visibilityTimeout: "00:00:05" } } },
      ONE_CORE,
    );
    expect(findings.map((finding) => [finding.setting, finding.problem])).toEqual([
      ["extensions.queues.maxPollingInterval", 'set to "00:00:30"'],
    ]);
    expect(findings[0]?.cost).toMatch(/up to 30 s late/);
  });

  it("names a maxDequeueCount other than the one the worker counts on, a non-base64 encoding and a batch too big for the memory bound", () => {
    expect(
      settingsOf({
        maxPollingInterval: "00:00:02",
        visibilityTimeout: "00:00:05",
        maxDequeueCount: 3,
        messageEncoding: "none",
        batchSize: 32,
      }),
    ).toEqual([
      "extensions.queues.maxDequeueCount",
      "extensions.queues.messageEncoding",
      "extensions.queues.batchSize",
    ]);
  });

  it("names a missing visibilityTimeout: a failed unit is retried at once", () => {
    const findings = checkHostJson({ extensions: { queues: { maxPollingInterval: "00:00:02" } } }, ONE_CORE);
    expect(findings.map((finding) => finding.setting)).toEqual(["extensions.queues.visibilityTimeout"]);
    expect(findings[0]?.cost).toMatch(/retried at once/);
  });

  it("names a missing newBatchThreshold where the host's default, batchSize / 2 × the processors, holds more units than the memory bound (not on a Dynamic SKU)", () => {
    const queues = { maxPollingInterval: "00:00:02", visibilityTimeout: "00:00:05" };
    const findings = checkHostJson({ extensions: { queues } }, { processorCount: 2 });
    expect(findings.map((finding) => finding.setting)).toEqual(["extensions.queues.newBatchThreshold"]);
    expect(findings[0]?.problem).toBe(
      "not set: the Functions host's default is batchSize / 2 × the instance's processor count (WEBSITE_SKU is not Dynamic), 8 × 2 = 16 on this one: 32 units at once",
    );
    expect(findings[0]?.fix).toBe('"newBatchThreshold": 8');
    // Where the SKU is Dynamic (Consumption; Flex Consumption is not), the default stays batchSize / 2.
    expect(checkHostJson({ extensions: { queues } }, { processorCount: 2, websiteSku: "Dynamic" })).toEqual([]);
    expect(checkHostJson({ extensions: { queues } }, ONE_CORE)).toEqual([]);
    // Set, it is what the host uses, whatever the processors.
    expect(
      checkHostJson({ extensions: { queues: { ...queues, newBatchThreshold: 8 } } }, { processorCount: 8 }),
    ).toEqual([]);
  });

  it("says plainly when there is no host.json at all, and describes the findings in one message", () => {
    const dir = mkdtempSync(join(tmpdir(), "hostjson-check-"));
    const missing = checkHostJsonFile(join(dir, "host.json"));
    expect(missing[0]?.setting).toBe("host.json");
    const path = join(dir, "host.json");
    writeFileSync(path, JSON.stringify({ version: "2.0", extensions: { queues: { visibilityTimeout: "00:00:05" } } }));
    const text = describeHostJsonFindings(checkHostJsonFile(path), path);
    expect(text).toContain(`${path} lacks settings the coordinator relies on`);
    expect(text).toContain("extensions.queues.maxPollingInterval");
    expect(text).toContain("docs/HOST-JSON.md");
    expect(readFileSync(path, "utf8")).toContain("visibilityTimeout");
  });

  it("reports a host.json that is not JSON as a finding, not a crash", () => {
    const path = join(mkdtempSync(join(tmpdir(), "hostjson-check-")), "host.json");
    writeFileSync(path, "{ not json");
    expect(checkHostJsonFile(path)[0]?.problem).toMatch(/^is not JSON/);
  });
});
