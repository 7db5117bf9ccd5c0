import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { listFiles } from "../../scripts/verification/infraCheck/compile";
import { formatDiagnostic } from "../../scripts/verification/infraCheck/diagnostics";
import { TEMPLATE_ROOTS } from "../../scripts/verification/infraCheck/repoInfra";
import { describeCompiled, readTemplate, useCompiledInfra } from "./compiled";
import { REPO_ROOT } from "./paths";

const run = promisify(execFile);

describeCompiled("the Bicep compiler (npm run infra:check)", () => {
  const infra = useCompiledInfra();

  it("builds, builds the params of, lints and evaluates every template with no error and no warning", () => {
    expect(infra().diagnostics.map(formatDiagnostic)).toEqual([]);
    expect(infra().failedSteps).toEqual([]);
  });

  it("compiled every .bicep of infra/ and bicep/ to ARM JSON, and main.bicepparam to parameters main.bicep declares", () => {
    const templates = TEMPLATE_ROOTS.flatMap((root) => listFiles(REPO_ROOT, root, ".bicep"));
    expect(templates).toContain("infra/main.bicep");
    expect(templates).toContain("bicep/coordinator.bicep");
    for (const template of templates)
      expect(existsSync(path.join(infra().dir, template.replace(/\.bicep$/, ".json"))), template).toBe(true);
    const parameters = JSON.parse(readFileSync(path.join(infra().dir, "infra", "main.parameters.json"), "utf8")) as {
      parameters: Record<string, unknown>;
    };
    const declared = readTemplate(infra(), "infra/main.bicep").parameters as Record<string, unknown>;
    expect(Object.keys(parameters.parameters).length).toBeGreaterThan(0);
    for (const name of Object.keys(parameters.parameters)) expect(declared, name).toHaveProperty(name);
  });

  it("every module file is referenced by a template (main.bicep and azd.bicep are the entry points)", () => {
    const templates = TEMPLATE_ROOTS.flatMap((root) => listFiles(REPO_ROOT, root, ".bicep"));
    const referenced = new Set<string>();
    for (const template of templates) {
      const source = readFileSync(path.join(REPO_ROOT, template), "utf8");
      for (const match of source.matchAll(/^\s*module \w+ '([^']+)'/gm))
        referenced.add(path.relative(REPO_ROOT, path.resolve(REPO_ROOT, path.dirname(template), match[1] ?? "")));
    }
    const entryPoints = ["infra/main.bicep", "infra/azd.bicep"];
    expect(templates.filter((file) => !entryPoints.includes(file) && !referenced.has(file))).toEqual([]);
  });
});

describeCompiled("infra:check fails on what Azure would refuse", () => {
  let copy: string | undefined;
  afterAll(() => {
    if (copy !== undefined) rmSync(copy, { recursive: true, force: true });
  });

  it("a copy with a misspelt resource property and a wrong enum value fails, naming both", async () => {
    // The template alone (it references no other), with the repository's rules: two compiler runs, not a dozen.
    copy = mkdtempSync(path.join(os.tmpdir(), "infra-broken-"));
    const file = path.join(copy, "infra", "modules", "storageAccount.bicep");
    mkdirSync(path.dirname(file), { recursive: true });
    cpSync(path.join(REPO_ROOT, "bicepconfig.json"), path.join(copy, "bicepconfig.json"));
    const source = readFileSync(path.join(REPO_ROOT, "infra", "modules", "storageAccount.bicep"), "utf8");
    const broken = source
      .replace("    allowSharedKeyAccess: false", "    allowSharedKeyAcess: false")
      .replace("    accessTier: 'Hot'", "    accessTier: 'Warm'");
    expect(broken).not.toBe(source);
    writeFileSync(file, broken);
    const tsx = path.join(REPO_ROOT, "node_modules", ".bin", "tsx");
    const outcome = await run(tsx, ["scripts/verification/infraCheck.ts", "--project", copy], { cwd: REPO_ROOT }).then(
      ({ stdout }) => ({ code: 0, stdout }),
      (error: unknown) => {
        const failed = error as { code?: number; stdout?: string };
        return { code: failed.code, stdout: failed.stdout ?? "" };
      },
    );
    expect(outcome.code).toBe(1);
    // Bicep reports both as warnings (a plain `bicep build` succeeds); infra:check fails on any diagnostic.
    expect(outcome.stdout).toMatch(
      /infra\/modules\/storageAccount\.bicep\(\d+,\d+\): Warning BCP089: The property "allowSharedKeyAcess" is not allowed/,
    );
    expect(outcome.stdout).toMatch(
      /infra\/modules\/storageAccount\.bicep\(\d+,\d+\): Warning BCP036: The property "accessTier" expected a value of type "'Cold' \| 'Cool' \| 'Hot'.*but the provided value is of type "'Warm'"/,
    );
    expect(outcome.stdout).toMatch(/0 errors, 2 warnings/);
  }, 300_000);
});
