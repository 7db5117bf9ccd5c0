import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { InvocationContext } from "@azure/functions";
import { AzureLogger, getLogLevel, setLogLevel } from "@azure/logger";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sinkFor } from "../../src/host/invocation";
import { azureSdkLogger } from "../../src/library/util/azureLogger";

/**
 * The coordinator's logs can be routed as the Azure SDK's are (issue 33): through `@azure/logger`, enabled by
 * `AZURE_LOG_LEVEL` or `setLogLevel`, written where `AzureLogger.log` sends them — beside the invocation's log, which
 * keeps everything it had.
 */

const REPO = resolve(__dirname, "..", "..");
const run = promisify(execFile);

describe("logging through @azure/logger", () => {
  const lines: string[] = [];
  const original = { log: AzureLogger.log, level: getLogLevel() };
  beforeEach(() => {
    lines.length = 0;
    AzureLogger.log = (...args: unknown[]) => lines.push(args.map(String).join(" "));
  });
  afterEach(() => {
    AzureLogger.log = original.log;
    setLogLevel(original.level);
  });

  it("writes at the levels setLogLevel enables, under the package's namespace, with its properties as JSON", () => {
    setLogLevel("info");
    azureSdkLogger.verbose("routine", { n: 1 });
    azureSdkLogger.info("leader changed", { epoch: 3 });
    azureSdkLogger.warn("renewal failed");
    expect(lines).toEqual([
      'azure:azure-leader-coordinator:info leader changed {"epoch":3}',
      "azure:azure-leader-coordinator:warning renewal failed",
    ]);
  });

  it("an invocation's logs and events reach @azure/logger as well as the invocation's own log", () => {
    setLogLevel("verbose");
    const invocationLog: string[] = [];
    const context = new InvocationContext({
      functionName: "coordinator",
      invocationId: "inv-1",
      logHandler: (level, ...args) => invocationLog.push(`${level}: ${args.map(String).join(" ")}`),
    });
    const sink = sinkFor(context);
    sink.logger.warn("Wake-up message rejected");
    sink.emit({
      type: "lease-acquired",
      instanceId: "i-1",
      atMs: 0,
      epoch: 2,
      previousHolder: "",
      transitions: 2,
    });
    expect(invocationLog).toEqual([
      "warning: Wake-up message rejected",
      expect.stringMatching(/^information: \[coordinator-event\] \{"type":"lease-acquired"/) as unknown,
    ]);
    expect(lines).toEqual([
      "azure:azure-leader-coordinator:warning Wake-up message rejected",
      expect.stringMatching(/^azure:azure-leader-coordinator:info \[coordinator-event\] \{"type":"lease-acquired"/),
    ]);
  });

  it("AZURE_LOG_LEVEL, read at start, enables it to stderr as the SDK's own logs are", async () => {
    const script = [
      'const { azureSdkLogger } = await import("./src/library/util/azureLogger.ts");',
      'azureSdkLogger.info("not at warning");',
      'azureSdkLogger.warn("at warning");',
    ].join("\n");
    const { stderr } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: REPO,
      env: { ...process.env, AZURE_LOG_LEVEL: "warning" },
    });
    expect(stderr).toMatch(/azure:azure-leader-coordinator:warning at warning/);
    expect(stderr).not.toMatch(/not at warning/);
  });
});
