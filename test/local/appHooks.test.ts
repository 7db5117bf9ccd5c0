import { describe, expect, it } from "vitest";
import { AppHooks } from "../../dev/src/local/appHooks";
import type { RegisteredHook } from "../../dev/src/local/registrations";

describe("AppHooks (the local host's app-level hooks)", () => {
  it("runs appTerminate hooks in order; one that throws is logged and the next still runs", async () => {
    const ran: string[] = [];
    const lines: string[] = [];
    const hooks: RegisteredHook[] = [
      { name: "appTerminate", callback: () => ran.push("first") },
      {
        name: "appTerminate",
        callback: () => {
          throw new Error("hook broke");
        },
      },
      { name: "preInvocation", callback: () => ran.push("pre") },
      { name: "appTerminate", callback: async () => ran.push(await Promise.resolve("third")) },
    ];
    const appHooks = new AppHooks(hooks, (level, message) => lines.push(`${level}: ${message}`));
    expect(appHooks.notRun).toEqual(["preInvocation"]);
    expect(await appHooks.runAppTerminate(1_000)).toBe(true);
    expect(ran).toEqual(["first", "third"]);
    expect(lines.some((line) => line.startsWith("error: An appTerminate hook failed: Error: hook broke"))).toBe(true);
  });

  it("stops waiting for appTerminate hooks after the timeout and says so", async () => {
    const lines: string[] = [];
    const appHooks = new AppHooks(
      [{ name: "appTerminate", callback: () => new Promise(() => undefined) }],
      (level, message) => lines.push(`${level}: ${message}`),
    );
    const startedMs = Date.now();
    expect(await appHooks.runAppTerminate(100)).toBe(false);
    expect(Date.now() - startedMs).toBeLessThan(1_000);
    expect(lines).toContain("warning: appTerminate hooks were still running after 100 ms; stopping anyway.");
  });

  it("shares app-level hookData between appStart and appTerminate, and gives appStart the app's folder", async () => {
    const seen: unknown[] = [];
    const appHooks = new AppHooks(
      [
        {
          name: "appStart",
          callback: (context) => {
            const { hookData, functionAppDirectory } = context as {
              hookData: Record<string, unknown>;
              functionAppDirectory: string;
            };
            hookData.note = `started in ${functionAppDirectory}`;
          },
        },
        {
          name: "appTerminate",
          callback: (context) => seen.push((context as { hookData: Record<string, unknown> }).hookData.note),
        },
      ],
      () => undefined,
    );
    await appHooks.runAppStart("/app");
    await appHooks.runAppTerminate(1_000);
    expect(seen).toEqual(["started in /app"]);
  });
});
