import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnqueueArgs } from "../../src/cli/enqueueCommand";
import { UsageError } from "../../src/cli/flags";
import { ConfigurationError } from "../../src/library/errors";

/**
 * `enqueue`: any kind, to an app's HTTP API (both bins) or through the app (`--app`, the development package's bin
 * only); bad command lines and bad job files named.
 */
describe("enqueue flags", () => {
  const dir = mkdtempSync(join(tmpdir(), "enqueue-flags-"));
  const job = join(dir, "job.json");
  writeFileSync(job, JSON.stringify({ kind: "my-own-kind", params: { n: 1 }, items: [{ inline: "x" }] }));
  const withApp = { withApp: true, env: {} };

  it("submits a job of any kind over the app's HTTP API, with the key from the flag or AZURE_FUNCTIONS_KEY", () => {
    expect(parseEnqueueArgs(["--file", job, "--url", "https://app.example/api", "--key", "k", "--wait"])).toEqual({
      action: { kind: "submit", body: { kind: "my-own-kind", params: { n: 1 }, items: [{ inline: "x" }] } },
      target: { kind: "url", url: "https://app.example/api", key: "k" },
      wait: true,
      timeoutS: 600,
      failOnItemFailures: false,
    });
    expect(
      parseEnqueueArgs(["--cancel", "id-1", "--url", "http://127.0.0.1:7071/api"], {
        env: { AZURE_FUNCTIONS_KEY: "admin" },
      }),
    ).toMatchObject({ action: { kind: "cancel", id: "id-1" }, target: { key: "admin" } });
  });

  it("puts --job-timeout or --deadline into the submission, over the file's own", () => {
    const url = ["--url", "https://a/api"];
    expect(parseEnqueueArgs(["--file", job, ...url, "--job-timeout", "3600"])).toMatchObject({
      action: { body: { kind: "my-own-kind", timeoutS: 3600 } },
    });
    expect(parseEnqueueArgs(["--file", job, ...url, "--deadline", "2026-05-01T12:00:00Z"])).toMatchObject({
      action: { body: { kind: "my-own-kind", deadline: "2026-05-01T12:00:00Z" } },
    });
    expect(parseEnqueueArgs(["--file", job, ...url, "--wait", "--fail-on-item-failures"])).toMatchObject({
      failOnItemFailures: true,
    });
  });

  it("goes straight to storage through the app's entry with --app, in the development package's bin only", () => {
    expect(parseEnqueueArgs(["--status", "id-2", "--app", join(dir, "index.js")], withApp)).toMatchObject({
      action: { kind: "status", id: "id-2" },
      target: { kind: "app", entry: join(dir, "index.js") },
    });
    expect(() => parseEnqueueArgs(["--status", "id-2", "--app", join(dir, "index.js")])).toThrow(
      /^--app runs your app on this machine, which is the development package's part: npm install --save-dev azure-leader-coordinator-dev/,
    );
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
      [
        ["--file", job, "--url", "https://a/api", "--fail-on-item-failures"],
        "--fail-on-item-failures goes with --wait.",
      ],
      [["--file", job, "--app", "a.js", "--key", "k"], "--key goes with --url: --app needs no key."],
      [
        ["--file", job, "--url", "https://a/api", "--timeout", "0"],
        '--timeout must be a whole number from 1 to 86400, got "0".',
      ],
      [
        ["--file", job, "--url", "https://a/api", "--job-timeout", "60", "--deadline", "2026-05-01T12:00:00Z"],
        "Give --job-timeout S or --deadline ISO_TIME, not both.",
      ],
      [
        ["--file", job, "--url", "https://a/api", "--deadline", "tomorrow"],
        '--deadline must be an ISO 8601 time such as 2026-05-01T12:00:00Z, got "tomorrow".',
      ],
    ];
    for (const [argv, message] of cases) expect(() => parseEnqueueArgs(argv, withApp)).toThrow(new UsageError(message));
  });

  it("a job file that is missing or not JSON is bad input, not a bad command line: its message comes alone", () => {
    const notJson = join(dir, "broken.json");
    writeFileSync(notJson, "{ kind: word-count");
    expect(() => parseEnqueueArgs(["--file", join(dir, "missing.json"), "--url", "https://a/api"])).toThrow(
      new ConfigurationError(`--file ${join(dir, "missing.json")}: no such file.`),
    );
    expect(() => parseEnqueueArgs(["--file", notJson, "--url", "https://a/api"])).toThrow(ConfigurationError);
    expect(() => parseEnqueueArgs(["--file", notJson, "--url", "https://a/api"])).toThrow(/is not JSON/);
  });
});
