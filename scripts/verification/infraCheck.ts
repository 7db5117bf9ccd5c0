/**
 * `npm run infra:check` (issue 34): the real Bicep compiler over every template of the repository — `bicep build` of
 * every .bicep (infra/ and the module the package ships, bicep/), `bicep build-params` of every .bicepparam,
 * `bicep lint` with bicepconfig.json's rules, and `bicep snapshot` of the deployments the infra tests read. Any
 * diagnostic, warning or error, fails it: Bicep reports a misspelt resource property or a wrong enum value as a
 * warning.
 *
 *   npm run infra:check
 *   npm run infra:check -- --project /tmp/copy   # another folder laid out like this one (infra/, bicep/)
 *
 * The compiler is `bicep` from PATH, else the pinned NuGet package restored with `dotnet` (infraCheck/bicepCli.ts).
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseFlags, pathFlag, UsageError } from "../../src/cli/flags";
import { BicepUnavailableError, findBicep } from "./infraCheck/bicepCli";
import { type CompileResult, compileTemplates, listFiles } from "./infraCheck/compile";
import { formatDiagnostic } from "./infraCheck/diagnostics";
import { TEMPLATE_ROOTS, compileRepoInfra } from "./infraCheck/repoInfra";

const HELP = `Usage: npm run infra:check -- [--project DIR]

  --project DIR  check DIR's infra/ and bicep/ (with DIR's bicepconfig.json) instead of this repository's
                 (without the repository's snapshots)

Exit code: 0 when the compiler and linter report nothing, 1 when they report anything, 2 on a bad command line or
when no compiler can be had.
`;

/** Builds, builds params and lints another project's infra/ and bicep/, into a temporary folder. */
async function checkProject(project: string): Promise<{ result: CompileResult; files: number }> {
  const roots = TEMPLATE_ROOTS.filter((root) => existsSync(path.join(project, root)));
  if (roots.length === 0) throw new UsageError(`--project ${project} has neither ${TEMPLATE_ROOTS.join(" nor ")}/.`);
  const cli = await findBicep((line) => console.log(line));
  console.log(cli.version);
  const outDir = mkdtempSync(path.join(os.tmpdir(), "infra-check-"));
  try {
    const result = await compileTemplates(cli, { cwd: project, roots, snapshots: [], outDir });
    return { result, files: roots.flatMap((root) => listFiles(project, root, ".bicep")).length };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const values = parseFlags(process.argv.slice(2), { project: { type: "string" }, help: { type: "boolean" } });
  if (values.help === true) {
    console.log(HELP);
    return;
  }
  const project = pathFlag(values.project, "--project");
  let result: CompileResult;
  let summary: string;
  if (project === undefined) {
    const compiled = await compileRepoInfra((line) => console.log(line));
    console.log(`${compiled.cli.version}${compiled.cached ? ": inputs unchanged since the last check" : ""}`);
    result = compiled;
    const templates = TEMPLATE_ROOTS.flatMap((root) => listFiles(process.cwd(), root, ".bicep")).length;
    summary = `${templates} templates built and linted, parameter files built, deployments evaluated`;
  } else {
    const checked = await checkProject(project);
    result = checked.result;
    summary = `${checked.files} templates built and linted in ${project}`;
  }
  for (const diagnostic of result.diagnostics) console.log(formatDiagnostic(diagnostic));
  for (const failed of result.failedSteps)
    if (result.diagnostics.length === 0) console.log(`bicep ${failed.step} failed:\n${failed.output}`);
  const errors = result.diagnostics.filter((d) => d.level === "Error").length;
  const warnings = result.diagnostics.length - errors;
  const failedSteps = result.failedSteps.length;
  console.log(
    `${summary}: ${errors} errors, ${warnings} warnings${failedSteps > 0 ? `, ${failedSteps} failed steps` : ""}`,
  );
  process.exitCode = result.diagnostics.length > 0 || failedSteps > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error(`\n${HELP}`);
  process.exitCode = error instanceof UsageError || error instanceof BicepUnavailableError ? 2 : 1;
});
