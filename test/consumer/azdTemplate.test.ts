import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { findBicep } from "../../scripts/verification/infraCheck/bicepCli";
import { type CompileResult, compileTemplates } from "../../scripts/verification/infraCheck/compile";
import { formatDiagnostic } from "../../scripts/verification/infraCheck/diagnostics";
import { SNAPSHOT_SCOPE } from "../../scripts/verification/infraCheck/repoInfra";
import { CONNECTION_SETTINGS } from "../../src/app/settings";
import { type AzureYaml, readAzureYaml } from "../infra/azureYaml";
import { type Snapshot, describeCompiled, ofType, only } from "../infra/compiled";
import { documentedTemplate } from "../infra/userApp";
import { REPO } from "./project";

/**
 * Issue 44, "Deploying a user's app": the azd template the development package ships (`templates/azd/`), taken from
 * the packed tarball as a user copies it, with the runtime's Bicep module from its own tarball where `npm install`
 * puts it. The real Bicep compiler builds and lints its infra (Bicep's default rules: a user has no bicepconfig.json
 * of ours) and evaluates `azd up`'s deployment for an environment; azure.yaml, the parameters file and the app's files
 * are read as azd, npm and Core Tools read them. azd, Core Tools and Azure cannot run here (docs/DEPLOY-YOUR-APP.md).
 */

describeCompiled("the azd template of the development package (templates/azd), from the packed tarballs", () => {
  const work = mkdtempSync(path.join(os.tmpdir(), "azd-template-"));
  const project = path.join(work, "my-app");
  let compiled: CompileResult | undefined;
  beforeAll(async () => {
    const packed = inject("packed");
    for (const [name, tarball] of [
      ["dev", packed.dev.tarball],
      ["runtime", packed.tarball],
    ] as const) {
      mkdirSync(path.join(work, name));
      execFileSync("tar", ["-xzf", tarball, "-C", path.join(work, name)]);
    }
    // The README's steps: the template's files into the project, the runtime installed beside them.
    cpSync(path.join(work, "dev", "package", "templates", "azd"), project, { recursive: true });
    const installed = path.join(project, "node_modules", "azure-leader-coordinator");
    mkdirSync(installed, { recursive: true });
    cpSync(path.join(work, "runtime", "package", "bicep"), path.join(installed, "bicep"), { recursive: true });
    compiled = await compileTemplates(await findBicep(), {
      cwd: project,
      roots: ["infra"],
      snapshots: [
        {
          name: "azd",
          template: "infra/main.bicep",
          params: `param environmentName = 'dev'\nparam location = '${SNAPSHOT_SCOPE.location}'`,
          subscriptionId: SNAPSHOT_SCOPE.subscriptionId,
          location: SNAPSHOT_SCOPE.location,
        },
      ],
      outDir: path.join(work, "compiled"),
    });
  }, 600_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const read = (file: string): string => readFileSync(path.join(project, file), "utf8");
  const azureYaml = (): AzureYaml => readAzureYaml(path.join(project, "azure.yaml"));
  const snapshot = (): Snapshot =>
    JSON.parse(readFileSync(path.join(work, "compiled", "snapshots", "azd.snapshot.json"), "utf8")) as Snapshot;

  it("compiles and lints with no error and no warning", () => {
    expect(compiled?.diagnostics.map(formatDiagnostic)).toEqual([]);
    expect(compiled?.failedSteps).toEqual([]);
  });

  it("azure.yaml: one TypeScript function service whose .deploy/ the prepackage hook builds with package", () => {
    const { services, infra } = azureYaml();
    expect(Object.keys(services)).toEqual(["app"]);
    expect(services.app).toEqual({
      project: ".",
      language: "ts",
      host: "function",
      dist: ".deploy",
      remoteBuild: false,
      hooks: { prepackage: { shell: "sh", run: "npm run package" } },
    });
    const manifest = JSON.parse(read("package.json")) as { scripts: Record<string, string> };
    expect(manifest.scripts.package).toBe("azure-leader-coordinator-dev package");
    expect(infra).toEqual({ provider: "bicep", path: "infra", module: "main" });
  });

  it("main.parameters.json maps azd's variables onto exactly the parameters main.bicep declares", () => {
    const parameters = JSON.parse(read("infra/main.parameters.json")) as { parameters: Record<string, unknown> };
    const template = JSON.parse(readFileSync(path.join(work, "compiled", "infra", "main.json"), "utf8")) as {
      parameters: Record<string, unknown>;
    };
    expect(parameters.parameters).toEqual({
      environmentName: { value: "${AZURE_ENV_NAME}" },
      location: { value: "${AZURE_LOCATION}" },
    });
    expect(Object.keys(template.parameters).sort()).toEqual(Object.keys(parameters.parameters).sort());
  });

  it("azd up: the environment's group, one app tagged with the service's name, the coordinator's storage and settings", () => {
    const azd = snapshot();
    expect(only(azd, "Microsoft.Resources/resourceGroups")).toMatchObject({ name: "rg-dev" });
    const tagged = azd.predictedResources.filter((resource) => resource.tags?.["azd-service-name"] !== undefined);
    expect(tagged.map((resource) => [resource.type, resource.name, resource.tags?.["azd-service-name"]])).toEqual([
      ["Microsoft.Web/sites", "func-dev", Object.keys(azureYaml().services)[0]],
    ]);
    expect(azd.outputs).toMatchObject({ AZURE_RESOURCE_GROUP: "rg-dev", AZURE_FUNCTION_APP_NAME: "func-dev" });
    expect(ofType(azd, "Microsoft.Storage/storageAccounts/queueServices/queues")).toHaveLength(5);
    const settings = only(azd, "Microsoft.Web/sites/config").properties ?? {};
    expect(settings[`${CONNECTION_SETTINGS.coordination}__credential`]).toBe("managedidentity");
  });

  it("its app is docs/DEPLOY-YOUR-APP.md's template, word for word", () => {
    expect(read("infra/app.bicep")).toBe(documentedTemplate());
  });

  it("its package.json depends on both packages at this version; its main is in the build output", () => {
    const version = (JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as { version: string }).version;
    const manifest = JSON.parse(read("package.json")) as {
      main: string;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(manifest.dependencies["azure-leader-coordinator"]).toBe(`^${version}`);
    expect(manifest.devDependencies["azure-leader-coordinator-dev"]).toBe(`^${version}`);
    expect(manifest.dependencies).not.toHaveProperty("azurite");
    const outDir = (JSON.parse(read("tsconfig.json")) as { compilerOptions: { outDir: string } }).compilerOptions
      .outDir;
    expect(manifest.main).toBe(`${outDir}/src/functions/coordinator.js`);
  });

  it(".funcignore: every pattern anchored at the root, none covering the build output or host.json", () => {
    const patterns = read(".funcignore")
      .split("\n")
      .filter((line) => line.trim() !== "" && !line.startsWith("#"));
    expect(patterns.length).toBeGreaterThan(0);
    for (const pattern of patterns) expect(pattern, pattern).toMatch(/^\//);
    for (const kept of ["/dist/", "/host.json", "/package.json", "/node_modules/"])
      expect(patterns.filter((pattern) => kept.startsWith(pattern.replace(/\*.*$/, "")))).toEqual([]);
  });

  it("local.settings.template.json: the host's and the coordinator's storage on Azurite's default ports", () => {
    const settings = JSON.parse(read("local.settings.template.json")) as { Values: Record<string, string> };
    expect(settings.Values).toEqual({
      FUNCTIONS_WORKER_RUNTIME: "node",
      AzureWebJobsStorage: "UseDevelopmentStorage=true",
      [CONNECTION_SETTINGS.coordination]: "UseDevelopmentStorage=true",
    });
  });
});
