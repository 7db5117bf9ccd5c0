import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runRepoLocal as runLocalCli } from "../../scripts/tools/local";
import { groupByKind } from "../../src/groupBy/groupBy";
import { registerCoordinator, type FunctionsApp } from "../../src/host/registerCoordinator";
import { ConfigurationError } from "../../src/library/errors";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { assertSupportedNode } from "../../src/library/nodeVersion";
import { FakeLeaseStore } from "../support/FakeLeaseStore";

/**
 * On a Node older than `engines` (22.12), the coordinator used to register and then fail every tick with "TypeError:
 * Promise.withResolvers is not a function" in the logs, while `npm run local` showed followers and a job at 0 % until
 * it was interrupted. Each entry now refuses at once, saying which Node it needs and which one it runs on. A client
 * that only submits or reads jobs is not refused: it builds a LeaderElector but never leads.
 */

const realNode = process.versions.node;
/** Makes this process report another Node version until the test ends. */
function pretendNode(version: string): void {
  Object.defineProperty(process.versions, "node", { value: version, configurable: true, writable: true });
}
afterEach(() => {
  pretendNode(realNode);
});

const NEEDS = /needs Node\.js 22\.12 or later \(22 or 24 on Azure Functions\); this process runs Node 20\.20\.2/;

describe("the supported Node.js versions (package.json engines: >=22.12)", () => {
  it.each(["22.12.0", "22.23.3", "23.0.0-rc.1", "24.0.0", "24.0.0-pre", "25.1.0"])("accepts %s", (version) => {
    expect(() => {
      assertSupportedNode(version);
    }).not.toThrow();
  });

  it.each(["20.20.2", "21.7.3", "22.11.0", "18.20.0", "garbage"])("refuses %s with the version it needs", (version) => {
    expect(() => {
      assertSupportedNode(version);
    }).toThrow(ConfigurationError);
    expect(() => {
      assertSupportedNode(version);
    }).toThrow(`needs Node.js 22.12 or later (22 or 24 on Azure Functions); this process runs Node ${version}.`);
  });

  it("its floor is package.json's engines", () => {
    const root = join(__dirname, "..", "..");
    const engines = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string } })
      .engines.node;
    const [, major = "", minor = ""] = /^>=(\d+)\.(\d+)$/.exec(engines) ?? [];
    expect(() => {
      assertSupportedNode(`${major}.${minor}.0`);
    }).not.toThrow();
    expect(() => {
      assertSupportedNode(`${major}.${Number(minor) - 1}.99`);
    }).toThrow(ConfigurationError);
  });

  it("registerCoordinator refuses on Node 20 before registering anything", () => {
    const registered: string[] = [];
    const app: FunctionsApp = {
      timer: (name) => registered.push(name),
      storageQueue: (name) => registered.push(name),
      http: (name) => registered.push(name),
      hook: { appTerminate: () => registered.push("appTerminate") },
    };
    pretendNode("20.20.2");
    expect(() => registerCoordinator(app, { taskKinds: [groupByKind], env: {} })).toThrow(NEEDS);
    expect(registered).toEqual([]);
  });

  it("the leader-election entry's LeaderElector refuses to lead on Node 20 (building one, as a client does, works)", async () => {
    pretendNode("20.20.2");
    const store = new FakeLeaseStore();
    const elector = new LeaderElector({ store });
    await expect(elector.tryLead(() => Promise.resolve())).rejects.toThrow(NEEDS);
    await expect(elector.lead(() => Promise.resolve())).rejects.toThrow(NEEDS);
    expect(store.calls).toEqual([]);
  });

  it("npm run local refuses on Node 20 with exit code 2 and the reason, starting nothing", async () => {
    const written: string[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation((chunk) => written.push(String(chunk)) > 0);
    pretendNode("20.20.2");
    try {
      // --instances 0 would be refused as a usage error: the version is checked before anything else.
      expect(await runLocalCli(["--instances", "0"])).toBe(2);
    } finally {
      stderr.mockRestore();
    }
    expect(written.join("")).toMatch(NEEDS);
  });
});
