import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { findBicep } from "../../scripts/verification/infraCheck/bicepCli";
import { type CompileResult, compileTemplates } from "../../scripts/verification/infraCheck/compile";
import { SNAPSHOT_SCOPE } from "../../scripts/verification/infraCheck/repoInfra";
import { REPO_ROOT } from "./paths";

/**
 * A user's own project, laid out as `npm install azure-leader-coordinator` leaves it, outside the repository:
 * `infra/main.bicep` (the template of docs/how-to/deploy.md, as written there) referencing
 * `../node_modules/azure-leader-coordinator/bicep/coordinator.bicep`, compiled by the real Bicep compiler with its
 * default rules (a user has no bicepconfig.json of ours) and evaluated for one app.
 */

/** The page whose template is compiled. */
export const DEPLOY_YOUR_APP = path.join(REPO_ROOT, "docs", "how-to", "deploy.md");
/** The app name the snapshot deploys. */
export const USER_APP_NAME = "func-my-app";

/** The page's main.bicep: its first bicep block that references the package's module. */
export function documentedTemplate(): string {
  const blocks = [...readFileSync(DEPLOY_YOUR_APP, "utf8").matchAll(/^```bicep\n([\s\S]*?)^```/gm)].map(
    (match) => match[1] ?? "",
  );
  const template = blocks.find((block) => block.includes("node_modules/azure-leader-coordinator/bicep/"));
  if (template === undefined) throw new Error(`${DEPLOY_YOUR_APP} has no bicep block using the package's module`);
  return template;
}

/** A user's project compiled. */
export interface CompiledUserProject extends CompileResult {
  /** The project folder (outside the repository). */
  readonly project: string;
  /** Where the ARM JSON and `snapshots/app.snapshot.json` are. */
  readonly outDir: string;
}

/**
 * Lays out a user's project around the package at `packageRoot` (this repository, or later an extracted `npm pack`
 * tarball: anything with the package's `bicep/` folder), compiles it and evaluates it for one app.
 */
export async function compileUserProject(packageRoot: string): Promise<CompiledUserProject> {
  const project = mkdtempSync(path.join(os.tmpdir(), "user-app-"));
  const installed = path.join(project, "node_modules", "azure-leader-coordinator");
  mkdirSync(installed, { recursive: true });
  cpSync(path.join(packageRoot, "bicep"), path.join(installed, "bicep"), { recursive: true });
  mkdirSync(path.join(project, "infra"));
  writeFileSync(path.join(project, "infra", "main.bicep"), documentedTemplate());
  const outDir = path.join(project, ".compiled");
  const result = await compileTemplates(await findBicep(), {
    cwd: project,
    roots: ["infra"],
    snapshots: [
      { name: "app", template: "infra/main.bicep", params: `param appName = '${USER_APP_NAME}'`, ...SNAPSHOT_SCOPE },
    ],
    outDir,
  });
  return { ...result, project, outDir };
}
