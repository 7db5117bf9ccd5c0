import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import {
  type PredictedResource,
  type Snapshot,
  describeCompiled,
  ofType,
  only,
  readSnapshot,
  readTemplate,
  useCompiledInfra,
} from "./compiled";
import { REPO_ROOT } from "./paths";

/**
 * What infra/main.bicep deploys with infra/main.bicepparam, as the compiler evaluates it (`bicep snapshot`): the
 * resources, their API versions, and the settings that keep them hardened. The linter (bicepconfig.json) already
 * refuses outdated API versions; these tests pin what the project chose.
 */

/** Storage accounts that are not hardened, and containers open to anonymous reads, as readable lines. */
export function storageHardeningViolations(resources: readonly PredictedResource[]): string[] {
  const required: Readonly<Record<string, unknown>> = {
    allowSharedKeyAccess: false,
    allowBlobPublicAccess: false,
    supportsHttpsTrafficOnly: true,
    minimumTlsVersion: "TLS1_2",
    defaultToOAuthAuthentication: true,
  };
  const violations: string[] = [];
  for (const resource of resources) {
    if (resource.type === "Microsoft.Storage/storageAccounts")
      for (const [property, expected] of Object.entries(required)) {
        const actual = resource.properties?.[property];
        if (actual !== expected)
          violations.push(`${resource.name}: ${property} must be ${String(expected)}, is ${String(actual)}`);
      }
    if (
      resource.type === "Microsoft.Storage/storageAccounts/blobServices/containers" &&
      resource.properties?.publicAccess !== "None"
    )
      violations.push(`${resource.name}: publicAccess must be None, is ${String(resource.properties?.publicAccess)}`);
  }
  return violations;
}

describeCompiled("what main.bicep deploys (compiled and evaluated by Bicep)", () => {
  const infra = useCompiledInfra();
  const main = (): Snapshot => readSnapshot(infra(), "main");

  it("the resource types and their API versions: GA only, the newest the pinned compiler knows where it flagged older ones", () => {
    const versions = new Map(main().predictedResources.map((resource) => [resource.type, resource.apiVersion]));
    expect(Object.fromEntries([...versions].sort())).toEqual({
      "Microsoft.Authorization/roleAssignments": "2022-04-01",
      "Microsoft.Insights/components": "2020-02-02",
      "Microsoft.Insights/scheduledQueryRules": "2026-03-01",
      "Microsoft.Insights/workbooks": "2023-06-01",
      "Microsoft.ManagedIdentity/userAssignedIdentities": "2024-11-30",
      "Microsoft.OperationalInsights/workspaces": "2026-03-01",
      "Microsoft.Storage/storageAccounts": "2026-06-01",
      "Microsoft.Storage/storageAccounts/blobServices": "2026-06-01",
      "Microsoft.Storage/storageAccounts/blobServices/containers": "2026-06-01",
      "Microsoft.Storage/storageAccounts/queueServices": "2026-06-01",
      "Microsoft.Storage/storageAccounts/queueServices/queues": "2026-06-01",
      "Microsoft.Web/serverfarms": "2025-03-01",
      "Microsoft.Web/sites": "2025-03-01",
      "Microsoft.Web/sites/config": "2025-03-01",
    });
    // The action group exists only with alertEmail (the variant sets one).
    expect(ofType(readSnapshot(infra(), "variant"), "Microsoft.Insights/actionGroups")[0]?.apiVersion).toBe(
      "2023-01-01",
    );
  });

  it("every storage account refuses shared keys, anonymous blob access, HTTP and TLS < 1.2; every container is private", () => {
    expect(ofType(main(), "Microsoft.Storage/storageAccounts")).toHaveLength(2);
    expect(storageHardeningViolations(main().predictedResources)).toEqual([]);
  });

  it("the hardening check names a weakened account and a public container", () => {
    const [storage] = ofType(main(), "Microsoft.Storage/storageAccounts");
    const [container] = ofType(main(), "Microsoft.Storage/storageAccounts/blobServices/containers");
    if (storage === undefined || container === undefined) throw new Error("no account or container");
    const weakened = [
      { ...storage, properties: { ...storage.properties, allowSharedKeyAccess: true, minimumTlsVersion: undefined } },
      { ...container, properties: { publicAccess: "Blob" } },
    ];
    expect(storageHardeningViolations(weakened)).toEqual([
      `${storage.name}: allowSharedKeyAccess must be false, is true`,
      `${storage.name}: minimumTlsVersion must be TLS1_2, is undefined`,
      `${container.name}: publicAccess must be None, is Blob`,
    ]);
  });

  it("the coordination account keeps deleted blobs and containers 7 days; host storage has soft delete off", () => {
    const coordination = readSnapshot(infra(), "main").outputs.coordinationStorageAccountName;
    const services = ofType(main(), "Microsoft.Storage/storageAccounts/blobServices");
    expect(services.map((service) => [service.name, service.properties])).toEqual(
      expect.arrayContaining([
        [
          `${String(coordination)}/default`,
          {
            deleteRetentionPolicy: { enabled: true, days: 7 },
            containerDeleteRetentionPolicy: { enabled: true, days: 7 },
          },
        ],
      ]),
    );
    const host = services.filter((service) => service.name !== `${String(coordination)}/default`);
    expect(host).toHaveLength(1);
    expect(host[0]?.properties).toEqual({
      deleteRetentionPolicy: { enabled: false },
      containerDeleteRetentionPolicy: { enabled: false },
    });
  });

  it("the plan is Flex Consumption (FC1) on Linux", () => {
    const plan = only(main(), "Microsoft.Web/serverfarms");
    expect(plan.sku).toEqual({ tier: "FlexConsumption", name: "FC1" });
    expect(plan.properties?.reserved).toBe(true);
  });

  it("the app is a Linux function app on Node 22, HTTPS only, with its user-assigned identity reading the deployment package", () => {
    const site = only(main(), "Microsoft.Web/sites");
    const identity = only(main(), "Microsoft.ManagedIdentity/userAssignedIdentities");
    expect(site.kind).toBe("functionapp,linux");
    expect(site.identity).toEqual({ type: "UserAssigned", userAssignedIdentities: { [identity.id]: {} } });
    expect(site.properties?.httpsOnly).toBe(true);
    expect(site.properties?.functionAppConfig).toMatchObject({
      runtime: { name: "node", version: "22" },
      scaleAndConcurrency: { maximumInstanceCount: 40, instanceMemoryMB: 2048 },
      deployment: {
        storage: {
          type: "blobContainer",
          authentication: { type: "UserAssignedIdentity", userAssignedIdentityResourceId: identity.id },
        },
      },
    });
    // App settings live only in the 'appsettings' config resource (so the settings tests see all of them).
    expect(site.properties?.siteConfig).toEqual({ minTlsVersion: "1.2" });
    expect(only(main(), "Microsoft.Web/sites/config").name).toBe(`${site.name}/appsettings`);
  });

  it("nodeVersion allows '22' (package.json's engines floor, the default) and '24', nothing else", () => {
    const parameters = readTemplate(infra(), "infra/main.bicep").parameters as Record<string, Record<string, unknown>>;
    expect(parameters.nodeVersion).toMatchObject({ type: "string", defaultValue: "22", allowedValues: ["22", "24"] });
    const engines = (
      JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { engines: { node: string } }
    ).engines.node;
    expect(engines).toBe(">=22.12");
  });

  it("Application Insights is workspace-based and refuses key-only ingestion; Log Analytics refuses shared keys", () => {
    const component = only(main(), "Microsoft.Insights/components");
    const workspace = only(main(), "Microsoft.OperationalInsights/workspaces");
    expect(component.properties).toMatchObject({ DisableLocalAuth: true, WorkspaceResourceId: workspace.id });
    expect(workspace.properties).toMatchObject({ features: { disableLocalAuth: true } });
  });
});
