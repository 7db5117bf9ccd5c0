import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INFRA_DIR } from "./paths";

/**
 * infra/smoke.sh talks to a deployed app, which CI cannot reach. Here it runs against stand-ins for `az` and `curl`
 * on PATH that answer like the Azure CLI and the app's HTTP API would, so its polling, checks and exit codes are
 * tested; whether the real app answers like this is only checked by running the script after a real deployment.
 */

const SCRIPT = path.join(INFRA_DIR, "smoke.sh");
const run = promisify(execFile);

const EXPECTED_AGGREGATE = { eu: { count: 2, sum: 8, min: 3, max: 5 }, us: { count: 1, sum: 4, min: 4, max: 4 } };

/** Fake `az`: the host name and the default function key, and a log of its arguments. */
const FAKE_AZ = `#!/usr/bin/env bash
echo "az $*" >> "$STUB_DIR/calls.log"
case "$*" in
  *"functionapp show"*) echo "app.example.test" ;;
  *"functionapp keys list"*) echo "fake-function-key" ;;
  *) echo "unexpected az call: $*" >&2; exit 1 ;;
esac
`;

/**
 * Fake \`curl\`: answers POST /api/jobs with 202 and a job id, then GET /api/jobs/{id} with the responses listed (one
 * file per poll, the last one repeating) in $STUB_DIR/get-<n>.json; records the request in calls.log.
 */
const FAKE_CURL = `#!/usr/bin/env bash
out="" method="GET" url="" key=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --output) out=$2; shift 2 ;;
    --request) method=$2; shift 2 ;;
    --header) [[ "$2" == x-functions-key:* ]] && key=\${2#x-functions-key: }; shift 2 ;;
    --data | --write-out | --max-time) shift 2 ;;
    --*) shift ;;
    *) url=$1; shift ;;
  esac
done
echo "curl $method $url key=$key" >> "$STUB_DIR/calls.log"
if [[ "$method" == POST ]]; then
  cp "$STUB_DIR/post.json" "$out"; cat "$STUB_DIR/post.status"
else
  n=$(cat "$STUB_DIR/gets" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$STUB_DIR/gets"
  file="$STUB_DIR/get-$n.json"; [[ -f "$file" ]] || file=$(ls "$STUB_DIR"/get-*.json | sort -V | tail -1)
  cp "$file" "$out"; echo 200
fi
`;

let binDir: string;

beforeAll(() => {
  binDir = mkdtempSync(path.join(tmpdir(), "smoke-bin-"));
  writeFileSync(path.join(binDir, "az"), FAKE_AZ);
  writeFileSync(path.join(binDir, "curl"), FAKE_CURL);
  chmodSync(path.join(binDir, "az"), 0o755);
  chmodSync(path.join(binDir, "curl"), 0o755);
});

afterAll(() => {
  rmSync(binDir, { recursive: true, force: true });
});

interface Scenario {
  postStatus?: number;
  post?: unknown;
  gets: unknown[];
  timeoutSeconds?: number;
}

/** Runs smoke.sh against the fakes; resolves with its exit code, output and the calls the fakes saw. */
async function runSmoke(scenario: Scenario, args = ["my-rg", "my-app"]) {
  const stubDir = mkdtempSync(path.join(tmpdir(), "smoke-stub-"));
  try {
    writeFileSync(path.join(stubDir, "post.status"), String(scenario.postStatus ?? 202));
    writeFileSync(
      path.join(stubDir, "post.json"),
      JSON.stringify(scenario.post ?? { id: "job-123", status: "running" }),
    );
    scenario.gets.forEach((body, index) => {
      writeFileSync(path.join(stubDir, `get-${index + 1}.json`), JSON.stringify(body));
    });
    const env = {
      ...process.env,
      PATH: `${binDir}${path.delimiter}${process.env.PATH ?? ""}`,
      STUB_DIR: stubDir,
      SMOKE_POLL_SECONDS: "0",
      SMOKE_TIMEOUT_SECONDS: String(scenario.timeoutSeconds ?? 30),
    };
    let code = 0;
    let stdout = "";
    let stderr = "";
    try {
      ({ stdout, stderr } = await run("bash", [SCRIPT, ...args], { env, timeout: 30_000 }));
    } catch (error) {
      const failed = error as { code?: number; stdout?: string; stderr?: string };
      code = failed.code ?? -1;
      stdout = failed.stdout ?? "";
      stderr = failed.stderr ?? "";
    }
    let calls = "";
    try {
      calls = (await run("cat", [path.join(stubDir, "calls.log")])).stdout;
    } catch {
      calls = "";
    }
    return { code, stdout, stderr, calls };
  } finally {
    rmSync(stubDir, { recursive: true, force: true });
  }
}

describe("infra/smoke.sh", () => {
  it("is valid bash (bash -n)", async () => {
    await expect(run("bash", ["-n", SCRIPT])).resolves.toBeDefined();
  });

  it("passes when the job completes with the expected aggregate, after polling while it runs", async () => {
    const result = await runSmoke({
      gets: [
        { id: "job-123", status: "running", progress: { done: 0, total: 2 } },
        {
          id: "job-123",
          status: "completed",
          progress: { done: 2, total: 2 },
          aggregate: { us: EXPECTED_AGGREGATE.us, eu: EXPECTED_AGGREGATE.eu },
        },
      ],
    });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("smoke: PASSED");
    expect(result.stdout).toContain('"eu":{"count":2,"sum":8,"min":3,"max":5}');
    expect(result.calls).toContain("az functionapp show --resource-group my-rg --name my-app");
    expect(result.calls).toContain("curl POST https://app.example.test/api/jobs key=fake-function-key");
    expect(
      result.calls.match(/curl GET https:\/\/app\.example\.test\/api\/jobs\/job-123 key=fake-function-key/g),
    ).toHaveLength(2);
  });

  it("fails when the aggregate differs from the expected one", async () => {
    const wrong = { ...EXPECTED_AGGREGATE, eu: { count: 2, sum: 9, min: 3, max: 6 } };
    const result = await runSmoke({ gets: [{ id: "job-123", status: "completed", aggregate: wrong }] });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("aggregate differs");
  });

  it("fails when the job ends in a state other than completed", async () => {
    const result = await runSmoke({ gets: [{ id: "job-123", status: "failed", error: "boom" }] });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("job job-123 is 'failed'");
  });

  it("fails when the submit is not accepted", async () => {
    const result = await runSmoke({ postStatus: 401, post: { error: "unauthorized" }, gets: [] });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("POST /api/jobs answered HTTP 401");
  });

  it("fails after the timeout when the job never completes", async () => {
    const result = await runSmoke({ gets: [{ id: "job-123", status: "running" }], timeoutSeconds: 1 });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("not completed after 1s");
  });

  it("exits 2 with usage when arguments are missing", async () => {
    const result = await runSmoke({ gets: [] }, ["only-one-argument"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("usage:");
  });
});
