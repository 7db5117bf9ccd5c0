import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnqueueArgs } from "../../src/cli/enqueueCommand";
import { UsageError } from "../../src/cli/flags";

/** `azure-leader-coordinator enqueue`: any kind, to an app's HTTP API or through the app; bad command lines named. */
describe("azure-leader-coordinator enqueue flags", () => {
  const dir = mkdtempSync(join(tmpdir(), "enqueue-flags-"));
  const job = join(dir, "job.json");
  writeFileSync(job, JSON.stringify({ kind: "my-own-kind", params: { n: 1 }, items: [{ inline: "x" }] }));

  it("submits a job of any kind over the app's HTTP API, with the key from the flag or AZURE_FUNCTIONS_KEY", () => {
    expect(parseEnqueueArgs(["--file", job, "--url", "https://app.example/api", "--key", "k", "--wait"])).toEqual({
      action: { kind: "submit", body: { kind: "my-own-kind", params: { n: 1 }, items: [{ inline: "x" }] } },
      target: { kind: "url", url: "https://app.example/api", key: "k" },
      wait: true,
      timeoutS: 600,
    });
    expect(
      parseEnqueueArgs(["--cancel", "id-1", "--url", "http://127.0.0.1:7071/api"], { AZURE_FUNCTIONS_KEY: "admin" }),
    ).toMatchObject({
      action: { kind: "cancel", id: "id-1" },
      target: { key: "admin" },
    });
  });

  it("goes straight to storage through the app's entry with --app", () => {
    expect(parseEnqueueArgs(["--status", "id-2", "--app", join(dir, "index.js")])).toMatchObject({
      action: { kind: "status", id: "id-2" },
      target: { kind: "app", entry: join(dir, "index.js") },
    });
  });

  it("refuses a bad command line, naming what is wrong", () => {
    const cases: [string[], string][] = [
      [["--url", "https://a/api"], "Give exactly one of --file JOB.json, --status JOB_ID or --cancel JOB_ID."],
      [["--file", job], "Give --url URL (your app's HTTP API) or --app FILE (straight to storage), one of them."],
      [
        ["--file", job, "--url", "ftp://a"],
        '--url must be an http(s) URL such as https://my-app.azurewebsites.net/api, got "ftp://a".',
      ],
      [["--status", "x", "--url", "https://a/api", "--wait"], "--wait goes with --file."],
      [["--file", job, "--app", "a.js", "--key", "k"], "--key goes with --url: --app needs no key."],
      [
        ["--file", job, "--url", "https://a/api", "--timeout", "0"],
        '--timeout must be a whole number from 1 to 86400, got "0".',
      ],
      [
        ["--file", join(dir, "missing.json"), "--url", "https://a/api"],
        `--file ${join(dir, "missing.json")}: no such file.`,
      ],
    ];
    for (const [argv, message] of cases) expect(() => parseEnqueueArgs(argv, {})).toThrow(new UsageError(message));
  });
});
