import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { describeCompiled, ofType, only, readSnapshot, useCompiledInfra } from "./compiled";
import { INFRA_DIR, REPO_ROOT } from "./paths";

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
    expect(manifest.scripts.package).toBe("tsx dev/src/cli/bin.ts package");
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
  });
});

describeCompiled("infra/azd.bicep, as the compiler evaluates it (environment dev)", () => {
  const infra = useCompiledInfra();

  it("declares the parameters azd.parameters.json maps", () => {
    const parameters = JSON.parse(readFileSync(path.join(INFRA_DIR, "azd.parameters.json"), "utf8")) as {
      parameters: Record<string, unknown>;
    };
    const template = JSON.parse(readFileSync(path.join(infra().dir, "infra", "azd.json"), "utf8")) as {
      parameters: Record<string, unknown>;
    };
    for (const name of Object.keys(parameters.parameters)) expect(template.parameters, name).toHaveProperty(name);
  });

  it("subscription scope: the environment's resource group, tagged, with main.bicep's resources deployed into it", () => {
    const azd = readSnapshot(infra(), "azd");
    const group = only(azd, "Microsoft.Resources/resourceGroups");
    expect(group).toMatchObject({ name: "rg-dev", location: "swedencentral", tags: { "azd-env-name": "dev" } });
    const site = only(azd, "Microsoft.Web/sites");
    expect(site.id).toMatch(/\/resourceGroups\/rg-dev\/providers\/Microsoft\.Web\/sites\//);
    expect(azd.outputs).toMatchObject({ AZURE_RESOURCE_GROUP: "rg-dev", AZURE_FUNCTION_APP_NAME: site.name });
  });

  it("one app in the environment's region, tagged with azure.yaml's service name, and no other resource is", () => {
    const azd = readSnapshot(infra(), "azd");
    const tagged = azd.predictedResources.filter((resource) => resource.tags?.["azd-service-name"] !== undefined);
    expect(tagged.map((resource) => [resource.type, resource.tags?.["azd-service-name"]])).toEqual([
      ["Microsoft.Web/sites", Object.keys(azureYaml.services)[0]],
    ]);
    expect(ofType(azd, "Microsoft.Web/sites").map((site) => site.location)).toEqual(["swedencentral"]);
  });

  it("the signed-in user gets the deployer's roles", () => {
    const azd = readSnapshot(infra(), "azd");
    const deployer = ofType(azd, "Microsoft.Authorization/roleAssignments").filter(
      (assignment) => assignment.properties?.principalId === "11111111-1111-1111-1111-111111111111",
    );
    expect(deployer).toHaveLength(4);
    for (const assignment of deployer) expect(assignment.properties?.principalType).toBe("User");
  });
});
