import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  type BicepFile,
  INFRA_DIR,
  REPO_ROOT,
  moduleDeclarations,
  parameterDeclarations,
  parseBicepFile,
  resourceDeclarations,
  stringLiteral,
  valueAt,
} from "./bicep";
import { type BicepValue, evaluate } from "./evaluate";

/**
 * `azd up` (azure.yaml) deploys the single-app case as the official Flex Consumption quickstarts do: infra/azd.bicep at
 * subscription scope creates the environment's resource group and deploys main.bicep into it with one app tagged for
 * azd deploy, and azd deploys the deploy package (.deploy/, production dependencies only). azd cannot run here; these
 * tests read what azd reads (azure.yaml with the azd schema's keys, azd.parameters.json's azd variables) and check it
 * fits the templates.
 */

interface AzureYaml {
  name: string;
  services: Record<
    string,
    {
      project: string;
      language: string;
      host: string;
      dist?: string;
      remoteBuild?: boolean;
      hooks?: Record<string, { shell?: string; run: string }>;
    }
  >;
  infra: { provider: string; path: string; module: string };
}

const azureYaml = parse(readFileSync(path.join(REPO_ROOT, "azure.yaml"), "utf8")) as AzureYaml;
let azd: BicepFile;
let main: BicepFile;
let functionApp: BicepFile;

beforeAll(async () => {
  azd = await parseBicepFile(path.join(INFRA_DIR, "azd.bicep"));
  main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
  functionApp = await parseBicepFile(path.join(INFRA_DIR, "modules", "functionApp.bicep"));
});

describe("azure.yaml", () => {
  it("one TypeScript function service; azd zips .deploy/, which its prepackage hook builds with npm run package", () => {
    const services = Object.entries(azureYaml.services);
    expect(services).toHaveLength(1);
    const [, service] = services[0] ?? [];
    expect(service).toMatchObject({ project: ".", language: "ts", host: "function", dist: ".deploy" });
    // Explicitly false: azd keeps the package's node_modules (production dependencies) and builds nothing remotely.
    expect(service?.remoteBuild).toBe(false);
    expect(service?.hooks?.prepackage?.run).toBe("npm run package");
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.package).toBe("tsx scripts/tools/package.ts");
  });

  it("provisions with infra/azd.bicep and its parameters file, which maps azd's variables", () => {
    expect(azureYaml.infra).toEqual({ provider: "bicep", path: "infra", module: "azd" });
    const parameters = JSON.parse(readFileSync(path.join(INFRA_DIR, "azd.parameters.json"), "utf8")) as {
      parameters: Record<string, { value: string }>;
    };
    expect(parameters.parameters).toEqual({
      environmentName: { value: "${AZURE_ENV_NAME}" },
      location: { value: "${AZURE_LOCATION}" },
      principalId: { value: "${AZURE_PRINCIPAL_ID}" },
      alertEmail: { value: "${ALERT_EMAIL}" },
    });
    const declared = parameterDeclarations(azd);
    for (const name of Object.keys(parameters.parameters)) expect(declared.has(name), name).toBe(true);
  });
});

describe("infra/azd.bicep", () => {
  it("subscription scope: the environment's resource group, tagged, with main.bicep deployed into it", () => {
    expect(azd.source).toMatch(/^targetScope = 'subscription'$/m);
    const group = resourceDeclarations(azd).find((resource) => resource.type === "Microsoft.Resources/resourceGroups");
    expect(valueAt(group?.body, "name")?.text).toBe("'rg-${environmentName}'");
    expect(valueAt(group?.body, "tags")?.text).toBe("tags");
    const coordinator = moduleDeclarations(azd).find((module) => module.path === "main.bicep");
    expect(valueAt(coordinator?.body, "scope")?.text).toBe(group?.symbol);
    expect(azd.source).toContain("'azd-env-name': environmentName");
  });

  it("one app in the environment's region, tagged with azure.yaml's service name; the signed-in user as deployer", () => {
    const params = valueAt(moduleDeclarations(azd).find((module) => module.path === "main.bicep")?.body, "params");
    expect(valueAt(params, "appRegions")?.namedChildren.map((child) => child.text)).toEqual(["location"]);
    expect(stringLiteral(valueAt(params, "azdServiceName"))).toBe(Object.keys(azureYaml.services)[0]);
    expect(valueAt(params, "deployerPrincipalId")?.text).toBe("principalId");
    expect(valueAt(params, "deployerPrincipalType")?.text).toBe("principalType");
    expect(valueAt(params, "alertEmail")?.text).toBe("alertEmail");
  });

  it("azd-service-name goes on the first app only, and on no other resource (azd deploy needs exactly one)", () => {
    const passed = valueAt(
      moduleDeclarations(main).find((module) => module.path === "modules/functionApp.bicep")?.body,
      "params",
      "siteTags",
    );
    if (passed === undefined) throw new Error("main.bicep passes no siteTags");
    const tagsFor = (index: number, service: string): BicepValue =>
      evaluate(
        passed,
        new Map<string, BicepValue>([
          ["i", index],
          ["azdServiceName", service],
        ]),
      );
    expect(tagsFor(0, "coordinator")).toEqual({ "azd-service-name": "coordinator" });
    expect(tagsFor(1, "coordinator")).toEqual({});
    expect(tagsFor(0, "")).toEqual({});
    const tagged = resourceDeclarations(functionApp).filter((resource) =>
      valueAt(resource.body, "tags")?.text.includes("siteTags"),
    );
    expect(tagged.map((resource) => resource.type)).toEqual(["Microsoft.Web/sites"]);
  });
});
