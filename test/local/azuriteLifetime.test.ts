import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { startAzurite } from "../../dev/src/local/azurite";
import { delay } from "../../src/library/util/delay";

/**
 * Azurite never outlives the process that started it (issue 43, hole 2). `startAzurite` runs it under a guard process
 * that kills it when the guard's stdin closes (its parent went away); a guard killed with SIGKILL cannot do that, so
 * Azurite would be adopted by init and keep its ports. Checked where it used to happen: `process.exit()` in the
 * starter (a failed test run, a CLI error), the start timeout, and the stop fallback for an Azurite that ignores
 * SIGTERM. The last two use a stand-in Azurite (a script in a project's node_modules/azurite) that never listens, or
 * ignores SIGTERM: the real one cannot be made to do either on purpose.
 */

const STARTER = resolve(__dirname, "fixtures", "azuriteStarter.ts");
const REPO = resolve(__dirname, "..", "..");

/** True while `pid` runs: /proc has it and it is not a zombie (PID 1 here need not reap orphans). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] !== "Z";
  } catch {
    return false;
  }
}

/** The running children of `pid` (from /proc/<child>/stat's parent field). */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((child) => {
      try {
        const stat = readFileSync(`/proc/${child}/stat`, "utf8");
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid && alive(child);
      } catch {
        return false;
      }
    });
}

/** Waits until `pid` has exited, at most `timeoutMs`; returns whether it has. */
async function exits(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await delay(100);
  }
  return true;
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolvePort(true);
    });
    socket.once("error", () => resolvePort(false));
  });
}

const projects: string[] = [];
afterAll(() => {
  for (const project of projects) rmSync(project, { recursive: true, force: true });
});

/**
 * A project whose `azurite` is a stand-in: it writes its pid to `pid.txt` in the project and then either never says it
 * listens ("silent") or says so and ignores SIGTERM ("stubborn"). Either way it runs until killed.
 */
function standInProject(behaviour: "silent" | "stubborn"): { dir: string; pid: () => number | undefined } {
  const dir = mkdtempSync(join(tmpdir(), "azurite-stand-in-"));
  projects.push(dir);
  const main = join(dir, "node_modules", "azurite", "dist", "src");
  mkdirSync(main, { recursive: true });
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "stand-in-project", private: true }));
  writeFileSync(
    join(dir, "node_modules", "azurite", "package.json"),
    JSON.stringify({ name: "azurite", version: "0.0.0" }),
  );
  const listen = ["Blob", "Queue", "Table"]
    .map((service, index) => `Azurite ${service} service is successfully listening at http://127.0.0.1:${index + 1}`)
    .join("\\n");
  writeFileSync(
    join(main, "azurite.js"),
    [
      `require("node:fs").writeFileSync(${JSON.stringify(join(dir, "pid.txt"))}, String(process.pid));`,
      behaviour === "stubborn" ? `process.on("SIGTERM", () => {}); console.log("${listen}");` : "",
      "setInterval(() => {}, 1000);",
    ].join("\n"),
  );
  const pidFile = join(dir, "pid.txt");
  return { dir, pid: () => (existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8")) : undefined) };
}

/** Waits for the stand-in to have written its pid. */
async function standInPid(project: { pid: () => number | undefined }): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const pid = project.pid();
    if (pid !== undefined && pid > 0) return pid;
    await delay(50);
  }
  throw new Error("the stand-in Azurite never started");
}

describe("Azurite ends with the process that started it (issue 43, hole 2)", () => {
  it("after process.exit() in the starter, Azurite exits and its ports close", async () => {
    const starter = spawn(process.execPath, ["--import", "tsx", STARTER, REPO], {
      cwd: REPO,
      stdio: ["pipe", "pipe", "inherit"],
    });
    const lines = createInterface({ input: starter.stdout });
    const line = await new Promise<string>((resolveLine) => lines.once("line", resolveLine));
    const { guardPid, blobPort } = JSON.parse(line) as { guardPid: number; blobPort: number };
    const [azuritePid] = childrenOf(guardPid);
    expect(azuritePid, "Azurite runs under its guard").toBeDefined();
    expect(await listening(blobPort)).toBe(true);
    const exited = new Promise((done) => starter.once("exit", done));
    starter.stdin.write("exit\n");
    await exited;
    const gone = await exits(azuritePid ?? 0, 15_000);
    if (!gone) process.kill(azuritePid ?? 0, "SIGKILL");
    expect(gone, `Azurite (pid ${azuritePid}) still ran 15 s after its starter's process.exit()`).toBe(true);
    expect(await listening(blobPort)).toBe(false);
  }, 60_000);

  it("when it does not listen within startTimeoutMs, the start fails and Azurite is ended", async () => {
    const project = standInProject("silent");
    await expect(startAzurite({ projectDir: project.dir, startTimeoutMs: 2_000 })).rejects.toThrow(
      /Azurite did not start within 2000 ms/,
    );
    const pid = await standInPid(project);
    const gone = await exits(pid, 15_000);
    if (!gone) process.kill(pid, "SIGKILL");
    expect(gone, `the Azurite that did not start (pid ${pid}) still ran 15 s after the start gave up`).toBe(true);
  }, 60_000);

  it("an Azurite that ignores SIGTERM is ended by stop() all the same", async () => {
    const project = standInProject("stubborn");
    const azurite = await startAzurite({ projectDir: project.dir, startTimeoutMs: 10_000 });
    const pid = await standInPid(project);
    await azurite.stop();
    const gone = await exits(pid, 5_000);
    if (!gone) process.kill(pid, "SIGKILL");
    expect(gone, `the Azurite that ignored SIGTERM (pid ${pid}) still ran 5 s after stop() returned`).toBe(true);
  }, 60_000);
});
