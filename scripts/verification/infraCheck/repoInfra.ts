import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import path from "node:path";
import { type BicepCli, REPO_ROOT, RESTORE_DIR, findBicep } from "./bicepCli";
import { type CompileResult, type SnapshotRequest, compileTemplates, listFiles } from "./compile";

/**
 * This repository's templates, compiled once per change: `npm run infra:check` and the infra tests share the result,
 * kept in `.bicep-cli/compiled/<hash>/` (git-ignored) under a hash of every input (templates, bicepconfig.json, the
 * shipped module, these scripts, the compiler's version). A second run with nothing changed reads it back.
 */

/** Folders whose templates are built and linted: the repository's own, and the module the package ships. */
export const TEMPLATE_ROOTS = ["infra", "bicep"] as const;

/** The subscription, group and region the snapshots evaluate in (the templates name none of their own). */
export const SNAPSHOT_SCOPE = {
  subscriptionId: "00000000-0000-0000-0000-000000000000",
  resourceGroup: "rg-leader",
  location: "swedencentral",
} as const;

/** A deployer's object id in the variant snapshot (any GUID). */
export const VARIANT_DEPLOYER_ID = "11111111-1111-1111-1111-111111111111";

/** The evaluations the tests read; each is one `bicep snapshot`. */
export function repoSnapshots(): SnapshotRequest[] {
  const mainParams = readFileSync(path.join(REPO_ROOT, "infra", "main.bicepparam"), "utf8").replace(/^using .*$/m, "");
  return [
    // infra/main.bicepparam as deployed.
    { name: "main", template: "infra/main.bicep", params: mainParams, ...SNAPSHOT_SCOPE },
    // Everything a user may change at once: a prefix and regions to normalise, every container and queue renamed,
    // two apps in one region, a deployer and an alert address.
    {
      name: "variant",
      template: "infra/main.bicep",
      params: [
        "param namePrefix = 'My-App'",
        "param appRegions = ['Sweden Central', 'swedencentral']",
        "param leaseContainer = 'l-renamed'",
        "param stateContainer = 's-renamed'",
        "param inputContainer = 'i-renamed'",
        "param systemContainer = 'y-renamed'",
        "param workQueue = 'w-renamed'",
        "param resultsQueue = 'r-renamed'",
        "param wakeQueue = 'k-renamed'",
        `param deployerPrincipalId = '${VARIANT_DEPLOYER_ID}'`,
        "param deployerPrincipalType = 'ServicePrincipal'",
        "param alertEmail = 'ops@example.com'",
        "param noStepAlertMinutes = 30",
        "param leaderChangesPerHourAlert = 200",
      ].join("\n"),
      ...SNAPSHOT_SCOPE,
    },
    // azd up: subscription scope, as azd passes its variables.
    {
      name: "azd",
      template: "infra/azd.bicep",
      params: [
        "param environmentName = 'dev'",
        `param location = '${SNAPSHOT_SCOPE.location}'`,
        `param principalId = '${VARIANT_DEPLOYER_ID}'`,
      ].join("\n"),
      subscriptionId: SNAPSHOT_SCOPE.subscriptionId,
      location: SNAPSHOT_SCOPE.location,
    },
    // Awkward prefixes and regions, each case deploying main.bicep once (test/infra/fixtures/names.bicep).
    { name: "names", template: "test/infra/fixtures/names.bicep", params: "", ...SNAPSHOT_SCOPE },
  ];
}

/** The compiled templates of this repository and what the compiler said. */
export interface CompiledInfra extends CompileResult {
  /** The folder holding `infra/…json`, `bicep/…json` and `snapshots/<name>.snapshot.json`. */
  readonly dir: string;
  readonly cli: BicepCli;
  /** Whether this call read back an earlier compile of the same inputs. */
  readonly cached: boolean;
}

function inputsHash(cli: BicepCli): string {
  const hash = createHash("sha256").update(cli.version);
  const files = [
    "bicepconfig.json",
    "test/infra/fixtures/names.bicep",
    ...TEMPLATE_ROOTS.flatMap((root) => listFiles(REPO_ROOT, root, "")),
    ...listFiles(REPO_ROOT, "scripts/verification/infraCheck", ""),
  ];
  for (const file of files) hash.update(`\0${file}\0`).update(readFileSync(path.join(REPO_ROOT, file)));
  return hash.digest("hex").slice(0, 16);
}

/**
 * Compiles this repository's templates, or reads back the compile of the same inputs.
 *
 * @throws BicepUnavailableError when the machine has neither a `bicep` on PATH nor `dotnet`.
 */
export async function compileRepoInfra(log: (line: string) => void = () => undefined): Promise<CompiledInfra> {
  const cli = await findBicep(log);
  const dir = path.join(RESTORE_DIR, "compiled", inputsHash(cli));
  const resultFile = path.join(dir, "result.json");
  const readBack = (): CompiledInfra => {
    const result = JSON.parse(readFileSync(resultFile, "utf8")) as CompileResult;
    return { ...result, dir, cli, cached: true };
  };
  if (existsSync(resultFile)) return readBack();
  // One compile at a time per input: another process (a second test worker) that holds the lock is compiling the same
  // inputs, so wait for its result rather than compile them twice on a 2-core machine.
  const lock = `${dir}.lock`;
  mkdirSync(path.dirname(dir), { recursive: true });
  while (!tryLock(lock)) {
    if (existsSync(resultFile)) return readBack();
    await sleep(LOCK_POLL_MS);
  }
  try {
    if (existsSync(resultFile)) return readBack();
    return await compileInto(cli, dir);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** How often a process waiting for another's compile looks for its result. */
const LOCK_POLL_MS = 250;
/** A lock older than this belongs to a process that died mid-compile; it is taken over. */
const STALE_LOCK_MS = 15 * 60_000;

function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { recursive: true, force: true });
    } catch {
      // released meanwhile
    }
    return false;
  }
}

async function compileInto(cli: BicepCli, dir: string): Promise<CompiledInfra> {
  // Compiled beside, then renamed into place: a concurrent run (another test worker) never reads half a compile.
  const staging = `${dir}.${process.pid}.tmp`;
  rmSync(staging, { recursive: true, force: true });
  const result = await compileTemplates(cli, {
    cwd: REPO_ROOT,
    roots: TEMPLATE_ROOTS,
    snapshots: repoSnapshots(),
    outDir: staging,
  });
  writeFileSync(path.join(staging, "result.json"), JSON.stringify(result, null, 2));
  try {
    renameSync(staging, dir);
  } catch {
    // Another process got there first with the same inputs: use its compile.
    rmSync(staging, { recursive: true, force: true });
  }
  return { ...result, dir, cli, cached: false };
}
