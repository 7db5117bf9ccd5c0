import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { InvocationContext } from "@azure/functions";
import { describe, expect, it } from "vitest";
import { hostJsonNotice } from "../../src/host/hostJsonNotice";

/** The app says at start (its first timer tick, through the invocation's logger) what its host.json lacks. */
describe("the app's host.json notice", () => {
  function contextWith(warnings: string[]): InvocationContext {
    return new InvocationContext({
      functionName: "coordinator",
      logHandler: (level, ...args) => {
        if (level === "warning") warnings.push(args.map(String).join(" "));
      },
    });
  }

  it("warns once per process, naming the missing maxPollingInterval and what it costs, from the app's root folder", () => {
    const root = mkdtempSync(join(tmpdir(), "app-root-"));
    writeFileSync(
      join(root, "host.json"),
      JSON.stringify({ version: "2.0", extensions: { queues: { visibilityTimeout: "00:00:05" } } }),
    );
    const notice = hostJsonNotice({ AzureWebJobsScriptRoot: root });
    const warnings: string[] = [];
    notice(contextWith(warnings));
    notice(contextWith(warnings));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${join(root, "host.json")} lacks settings the coordinator relies on`);
    expect(warnings[0]).toMatch(/maxPollingInterval: not set.*up to a minute late/);
  });

  it("says nothing when the host.json has what the coordinator relies on", () => {
    const notice = hostJsonNotice({ AzureWebJobsScriptRoot: join(__dirname, "..", "..") });
    const warnings: string[] = [];
    notice(contextWith(warnings));
    expect(warnings).toEqual([]);
  });
});
