import { execFile } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REPO_ROOT } from "./paths";
import { bashBlocks } from "./deployPackage";

/**
 * The documented publish commands must work on a fresh clone. Core Tools cannot be installed here, so they run against
 * a stand-in `func` that decides the worker runtime the way `func azure functionapp publish` does
 * (azure-functions-core-tools: GlobalCoreToolsSettings.Init, PublishFunctionAppAction.ValidateFunctionAppPublish): a
 * runtime flag (`--typescript`, `--javascript`, `--node`, …) first, else FUNCTIONS_WORKER_RUNTIME from the environment
 * or from local.settings.json; with none of them it stops with "Worker runtime is not set". A fresh clone has no
 * local.settings.json (only local.settings.example.json, which Core Tools does not read). A stand-in for `az` answers
 * the deployment-output queries; the package it publishes is built by step 3 of
 * docs/contributing/deploy-this-repository.md (deployPackage.test.ts).
 */

const run = promisify(execFile);

const FAKE_FUNC = `#!/usr/bin/env bash
runtime=""
for arg in "$@"; do
  case "$arg" in
    --typescript | --javascript | --node) runtime=node ;;
    --csharp | --dotnet) runtime=dotnet ;;
    --dotnet-isolated) runtime=dotnet-isolated ;;
    --python) runtime=python ;;
    --java) runtime=java ;;
    --powershell) runtime=powershell ;;
    --custom) runtime=custom ;;
  esac
done
[[ -z "$runtime" ]] && runtime=\${FUNCTIONS_WORKER_RUNTIME:-}
if [[ -z "$runtime" && -f local.settings.json ]]; then
  runtime=$(node -e 'const v = JSON.parse(require("fs").readFileSync("local.settings.json", "utf8")).Values ?? {}; process.stdout.write(v.FUNCTIONS_WORKER_RUNTIME ?? "")')
fi
if [[ "$1 $2 $3" != "azure functionapp publish" || -z "\${4:-}" || "$4" == --* ]]; then
  echo "fake func: expected 'func azure functionapp publish <app> [options]', got: $*" >&2; exit 2
fi
if [[ -z "$runtime" ]]; then
  echo "Worker runtime is not set. Please set a valid runtime using FUNCTIONS_WORKER_RUNTIME" >&2; exit 1
fi
if [[ "$runtime" != node ]]; then
  echo "Your Azure Function App has 'FUNCTIONS_WORKER_RUNTIME' set to 'node' while your local project is set to '$runtime'." >&2; exit 1
fi
echo "publish $4 runtime=$runtime from=$(basename "$PWD")" >> "$STUB_LOG"
`;

/** Answers the deployment-output queries the docs use: the first app name, or every app name (tsv, one a line). */
const FAKE_AZ = `#!/usr/bin/env bash
echo "az $*" >> "$STUB_LOG"
case "$*" in
  *"deployment group show"*"appNames.value[0]"*) echo "func-leader-swedencentral-0-abc123" ;;
  *"deployment group show"*"appNames.value"*) printf 'func-leader-swedencentral-0-abc123\\nfunc-leader-northeurope-1-abc123\\n' ;;
esac
`;

/** Records the build steps (`npm ci`, `npm run build`, `npm run package`) instead of running them. */
const FAKE_NPM = `#!/usr/bin/env bash
echo "npm $*" >> "$STUB_LOG"
`;

const FAKE_SMOKE = `#!/usr/bin/env bash
echo "smoke $*" >> "$STUB_LOG"
`;

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "publish-"));
  const bin = path.join(dir, "bin");
  mkdirSync(bin);
  for (const [name, text] of [
    ["func", FAKE_FUNC],
    ["az", FAKE_AZ],
    ["npm", FAKE_NPM],
  ] as const) {
    writeFileSync(path.join(bin, name), text);
    chmodSync(path.join(bin, name), 0o755);
  }
  // A fresh clone: the example settings file, no local.settings.json; and the deploy package step 4 builds.
  const clone = path.join(dir, "clone");
  mkdirSync(path.join(clone, "infra"), { recursive: true });
  mkdirSync(path.join(clone, ".deploy"), { recursive: true });
  writeFileSync(path.join(clone, ".deploy", "host.json"), "{}");
  copyFileSync(path.join(REPO_ROOT, "local.settings.example.json"), path.join(clone, "local.settings.example.json"));
  writeFileSync(path.join(clone, "infra", "smoke.sh"), FAKE_SMOKE);
  chmodSync(path.join(clone, "infra", "smoke.sh"), 0o755);
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Runs bash code in the fresh clone with the stand-ins first on PATH and FUNCTIONS_WORKER_RUNTIME unset. */
async function inFreshClone(code: string, env: Record<string, string> = {}) {
  const log = path.join(dir, "calls.log");
  writeFileSync(log, "");
  const inherited = { ...process.env };
  delete inherited.FUNCTIONS_WORKER_RUNTIME;
  const options = {
    cwd: path.join(dir, "clone"),
    timeout: 20_000,
    env: {
      ...inherited,
      PATH: `${path.join(dir, "bin")}${path.delimiter}${process.env.PATH ?? ""}`,
      STUB_LOG: log,
      ...env,
    },
  };
  let exitCode = 0;
  let stderr = "";
  try {
    ({ stderr } = await run("bash", ["-e", "-c", code], options));
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    exitCode = failed.code ?? -1;
    stderr = failed.stderr ?? "";
  }
  return { code: exitCode, stderr, calls: readFileSync(log, "utf8") };
}

/** Every fenced bash block of a Markdown file that publishes with Core Tools. */
function publishBlocks(file: string): string[] {
  return bashBlocks(file, (block) => block.includes("functionapp publish"));
}

describe("the stand-in func decides the runtime like Core Tools' publish", () => {
  it("stops with 'Worker runtime is not set' on a fresh clone when no flag names the runtime", async () => {
    const result = await inFreshClone("func azure functionapp publish my-app");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Worker runtime is not set");
  });

  it.each([["--typescript"], ["--javascript"], ["--node"]])("publishes with %s", async (flag) => {
    const result = await inFreshClone(`func azure functionapp publish my-app ${flag}`);
    expect(result.stderr).toBe("");
    expect(result.calls).toBe("publish my-app runtime=node from=clone\n");
  });

  it("publishes with FUNCTIONS_WORKER_RUNTIME=node in the environment or in local.settings.json", async () => {
    expect(
      (await inFreshClone("func azure functionapp publish my-app", { FUNCTIONS_WORKER_RUNTIME: "node" })).calls,
    ).toBe("publish my-app runtime=node from=clone\n");
    expect(
      (
        await inFreshClone(
          "cp local.settings.example.json local.settings.json && func azure functionapp publish my-app",
        )
      ).calls,
    ).toBe("publish my-app runtime=node from=clone\n");
  });
});

describe("the documented publish works on a fresh clone (docs/contributing/deploy-this-repository.md; the README links there)", () => {
  it("publishes the deploy package (.deploy/, not the project folder) to every app of the deployment", async () => {
    const blocks = publishBlocks("docs/contributing/deploy-this-repository.md");
    expect(blocks.length).toBeGreaterThan(0);
    for (const block of blocks) {
      const result = await inFreshClone(block);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.calls.match(/^publish .*$/gm)).toEqual([
        "publish func-leader-swedencentral-0-abc123 runtime=node from=.deploy",
        "publish func-leader-northeurope-1-abc123 runtime=node from=.deploy",
      ]);
    }
  });
});

describe("the README's deploy block works on a fresh clone", () => {
  it("deploys, builds the deploy package, publishes .deploy/ to the first app and smoke-checks it", async () => {
    const blocks = publishBlocks("README.md");
    expect(blocks).toHaveLength(1);
    const result = await inFreshClone(blocks[0] ?? "");
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.calls.split("\n").filter((line) => /^(npm|publish|smoke)/.test(line))).toEqual([
      "npm ci",
      "npm run build",
      "npm run package",
      "publish func-leader-swedencentral-0-abc123 runtime=node from=.deploy",
      "smoke rg-leader func-leader-swedencentral-0-abc123",
    ]);
  });
});
