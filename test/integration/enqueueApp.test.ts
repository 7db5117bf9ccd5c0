import { spawn } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { useAzurite } from "../support/azuriteFixture";

/**
 * `enqueue --app --wait` serves nothing (issue 43, hole 4): it loads the user's app to submit through the app's own
 * route and read the job's status, for as long as it waits (up to a day), against whatever storage the operator's
 * environment names. It used to run every HTTP route of the app on 127.0.0.1 with no key, so any local process (or a
 * browser page's no-cors POST) could step the leader down or cancel jobs with the operator's identity. The command is
 * run as a user runs it, and while it waits every TCP port it listens on is tried with the admin routes.
 */

const REPO = resolve(__dirname, "..", "..");
const BIN = join(REPO, "dev", "src", "cli", "bin.ts");
const APP = join(REPO, "functions", "index.ts");

/** The TCP ports `pid` listens on: its socket inodes (/proc/<pid>/fd) among the LISTEN sockets of /proc/net/tcp{,6}. */
function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // closed meanwhile
    }
  }
  const ports: number[] = [];
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const [, local, , state] = fields;
      if (state === "0A" && inodes.has(fields[9] ?? "")) ports.push(parseInt(local?.split(":")[1] ?? "0", 16));
    }
  }
  return ports;
}

describe("enqueue --app --wait (issue 43, hole 4)", () => {
  const storage = useAzurite();

  it("listens on no port while it waits: nobody can reach the app's admin routes through it", async () => {
    const job = join(REPO, "examples", "sales-job.json");
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        BIN,
        "enqueue",
        "--app",
        APP,
        "--host-json",
        join(REPO, "host.json"),
        "--file",
        job,
        "--wait",
      ],
      {
        cwd: REPO,
        env: { ...process.env, COORDINATION_STORAGE: storage.azurite.connectionString },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    try {
      const lines = createInterface({ input: child.stdout });
      // No coordinator runs, so the job stays pending and the command waits.
      const submitted = await new Promise<string>((resolveLine, reject) => {
        lines.on("line", (line) => {
          if (line.startsWith("Submitted job")) resolveLine(line);
        });
        child.once("exit", (code) => reject(new Error(`enqueue exited (code ${code}) before submitting`)));
      });
      const id = /Submitted job ([0-9a-f-]{36})/.exec(submitted)?.[1] ?? "";
      const reached: string[] = [];
      for (const port of listeningPorts(child.pid ?? 0)) {
        const base = `http://127.0.0.1:${port}/api`;
        const stepDown = await fetch(`${base}/leader/step-down`, { method: "POST" });
        const cancel = await fetch(`${base}/jobs/${id}`, { method: "DELETE" });
        reached.push(`port ${port}: POST leader/step-down ${stepDown.status}, DELETE jobs/${id} ${cancel.status}`);
      }
      expect(reached).toEqual([]);
    } finally {
      child.kill("SIGTERM");
    }
  }, 120_000);
});
