import { readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type BicepFile,
  FIXTURES_DIR,
  INFRA_DIR,
  REPO_ROOT,
  listFiles,
  moduleDeclarations,
  parameterDeclarations,
  parseBicepFile,
  resourceDeclarations,
  stringLiteral,
  valueAt,
} from "./bicep";
import { type BicepValue, evaluate } from "./evaluate";
import { API_VERSION_FLOORS, apiVersionViolations, storageHardeningViolations } from "./checks";

let templates: BicepFile[] = [];

beforeAll(async () => {
  templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
});

const fixture = (name: string): Promise<BicepFile> => parseBicepFile(path.join(FIXTURES_DIR, name));

/** Deployed (not `existing`) resources of a type across all templates. */
function deployed(type: string) {
  return templates
    .flatMap((file) => resourceDeclarations(file))
    .filter((resource) => resource.type === type && !resource.existing);
}

/** The one deployed resource of a type; fails the test if there is not exactly one. */
function only(type: string) {
  const found = deployed(type);
  expect(found, `exactly one deployed ${type}`).toHaveLength(1);
  const [resource] = found;
  if (resource === undefined) throw new Error(`no ${type}`);
  return resource;
}

describe("resource types", () => {
  it.each([
    "Microsoft.Storage/storageAccounts",
    "Microsoft.Storage/storageAccounts/blobServices/containers",
    "Microsoft.Storage/storageAccounts/queueServices/queues",
    "Microsoft.ManagedIdentity/userAssignedIdentities",
    "Microsoft.Web/serverfarms",
    "Microsoft.Web/sites",
    "Microsoft.Web/sites/config",
    "Microsoft.Authorization/roleAssignments",
    "Microsoft.OperationalInsights/workspaces",
    "Microsoft.Insights/components",
    "Microsoft.Insights/scheduledQueryRules",
    "Microsoft.Insights/actionGroups",
    "Microsoft.Insights/workbooks",
  ])("deploys %s", (type) => {
    expect(deployed(type)).not.toHaveLength(0);
  });
});

describe("API versions", () => {
  it("every provider floor is a GA date with a stated reason", () => {
    for (const [provider, { floor, reason }] of Object.entries(API_VERSION_FLOORS)) {
      expect(floor, provider).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(reason.length, provider).toBeGreaterThan(10);
    }
  });

  it("no template uses a preview API version, one older than its provider's floor, or an unlisted provider", () => {
    expect(apiVersionViolations(templates)).toEqual([]);
  });

  it("the check rejects an old version, a preview version and an unlisted provider (fixtures/old-api-version.bicep)", async () => {
    const violations = apiVersionViolations([await fixture("old-api-version.bicep")]);
    expect(violations).toEqual([
      expect.stringMatching(/oldStorage .*2021-09-01.*older than the floor 2023-05-01/),
      expect.stringMatching(/previewSite .*not a GA API version/),
      expect.stringMatching(/unlistedProvider .*no API-version floor chosen for provider Microsoft\.KeyVault/),
    ]);
  });
});

describe("storage hardening", () => {
  it("every storage account refuses shared keys, anonymous blob access, HTTP and TLS < 1.2; containers are private", () => {
    expect(deployed("Microsoft.Storage/storageAccounts")).not.toHaveLength(0);
    expect(storageHardeningViolations(templates)).toEqual([]);
  });

  it("the check rejects shared keys, a missing TLS minimum and a public container (fixtures/weak-storage.bicep)", async () => {
    const violations = storageHardeningViolations([await fixture("weak-storage.bicep")]);
    expect(violations).toEqual([
      expect.stringMatching(/allowSharedKeyAccess must be false, is true/),
      expect.stringMatching(/minimumTlsVersion must be 'TLS1_2', is unset/),
      expect.stringMatching(/openContainer\.properties\.publicAccess must be 'None', is 'Blob'/),
    ]);
  });
});

describe("soft delete", () => {
  /**
   * The blob service properties storageAccount.bicep deploys when main.bicep passes `passed` for deleteRetentionDays.
   */
  async function blobServiceProperties(passed: BicepValue | undefined) {
    const module = await parseBicepFile(path.join(INFRA_DIR, "modules", "storageAccount.bicep"));
    const service = resourceDeclarations(module).find(
      (r) => r.type === "Microsoft.Storage/storageAccounts/blobServices" && !r.existing,
    );
    const properties = valueAt(service?.body, "properties");
    if (properties === undefined) throw new Error("storageAccount.bicep deploys no blobServices properties");
    const declared = parameterDeclarations(module).get("deleteRetentionDays")?.defaultValue;
    const days = passed ?? (declared === undefined ? undefined : evaluate(declared, new Map()));
    if (days === undefined) throw new Error("storageAccount.bicep has no deleteRetentionDays parameter with a default");
    return evaluate(properties, new Map([["deleteRetentionDays", days]]));
  }

  it("the coordination account keeps deleted blobs and containers for 7 days (the lease container and all state are recoverable)", async () => {
    const main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
    const passed = valueAt(
      moduleDeclarations(main).find((m) => m.path === "modules/storageAccount.bicep")?.body,
      "params",
      "deleteRetentionDays",
    );
    const declared = passed === undefined ? undefined : parameterDeclarations(main).get(passed.text)?.defaultValue;
    const days = declared === undefined ? undefined : evaluate(declared, new Map());
    expect(days).toBe(7);
    expect(await blobServiceProperties(days)).toEqual({
      deleteRetentionPolicy: { enabled: true, days: 7 },
      containerDeleteRetentionPolicy: { enabled: true, days: 7 },
    });
  });

  it("an account that does not ask for it (host storage) has soft delete off rather than an invalid policy", async () => {
    expect(await blobServiceProperties(undefined)).toEqual({
      deleteRetentionPolicy: { enabled: false },
      containerDeleteRetentionPolicy: { enabled: false },
    });
  });
});

describe("Function App on Flex Consumption", () => {
  it("the plan is Flex Consumption (FC1) on Linux", () => {
    const plan = only("Microsoft.Web/serverfarms");
    expect(stringLiteral(valueAt(plan.body, "sku", "tier"))).toBe("FlexConsumption");
    expect(stringLiteral(valueAt(plan.body, "sku", "name"))).toBe("FC1");
    expect(valueAt(plan.body, "properties", "reserved")?.text).toBe("true");
  });

  it("the app is a Linux function app on Node, HTTPS only, with a user-assigned identity", () => {
    const site = only("Microsoft.Web/sites");
    expect(stringLiteral(valueAt(site.body, "kind"))).toBe("functionapp,linux");
    expect(stringLiteral(valueAt(site.body, "identity", "type"))).toBe("UserAssigned");
    expect(valueAt(site.body, "properties", "httpsOnly")?.text).toBe("true");
    expect(stringLiteral(valueAt(site.body, "properties", "functionAppConfig", "runtime", "name"))).toBe("node");
  });

  it("the Node version is main.bicep's nodeVersion: '22' (package.json's engines floor) by default, '24' selectable, nothing else", async () => {
    const main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
    const module = await parseBicepFile(path.join(INFRA_DIR, "modules", "functionApp.bicep"));
    const parameter = parameterDeclarations(main).get("nodeVersion");
    expect(parameter?.type).toBe("string");
    const allowed = parameter?.decorators.get("allowed")?.[0];
    expect(allowed === undefined ? undefined : evaluate(allowed, new Map())).toEqual(["22", "24"]);
    const declared = parameter?.defaultValue;
    const defaultVersion = declared === undefined ? undefined : evaluate(declared, new Map());
    const engines = (
      JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as { engines: { node: string } }
    ).engines.node;
    expect(defaultVersion).toBe("22");
    // 22.12: the first 22 that loads an ES module dependency from the package's CommonJS without a flag (set for
    // p-limit, since dropped; kept so an ES-module dependency needs no new floor).
    expect(engines).toBe(">=22.12");
    // Passed to every app, and the site's runtime version is that parameter, not a literal.
    expect(
      valueAt(
        moduleDeclarations(main).find((m) => m.path === "modules/functionApp.bicep")?.body,
        "params",
        "nodeVersion",
      )?.text,
    ).toBe("nodeVersion");
    expect(parameterDeclarations(module).get("nodeVersion")?.type).toBe("string");
    const site = resourceDeclarations(module).find(
      (resource) => resource.type === "Microsoft.Web/sites" && !resource.existing,
    );
    expect(valueAt(site?.body, "properties", "functionAppConfig", "runtime", "version")?.text).toBe("nodeVersion");
  });

  it("the deployment package is read with the user-assigned identity, not a connection string", () => {
    const site = only("Microsoft.Web/sites");
    const storage = valueAt(site.body, "properties", "functionAppConfig", "deployment", "storage");
    expect(stringLiteral(valueAt(storage, "type"))).toBe("blobContainer");
    expect(stringLiteral(valueAt(storage, "authentication", "type"))).toBe("UserAssignedIdentity");
    expect(valueAt(storage, "authentication", "userAssignedIdentityResourceId")?.text).toBe("identity.id");
  });

  it("app settings live only in the 'appsettings' config resource (so the settings test sees all of them)", () => {
    const site = only("Microsoft.Web/sites");
    expect(valueAt(site.body, "properties", "siteConfig", "appSettings")).toBeUndefined();
    const config = only("Microsoft.Web/sites/config");
    expect(stringLiteral(valueAt(config.body, "name"))).toBe("appsettings");
  });
});

describe("monitoring", () => {
  it("Application Insights is workspace-based and refuses key-only ingestion (DisableLocalAuth)", () => {
    const component = only("Microsoft.Insights/components");
    expect(valueAt(component.body, "properties", "DisableLocalAuth")?.text).toBe("true");
    expect(valueAt(component.body, "properties", "WorkspaceResourceId")?.text).toBe("workspace.id");
  });

  it("Log Analytics has local (shared key) auth disabled", () => {
    const workspace = only("Microsoft.OperationalInsights/workspaces");
    expect(valueAt(workspace.body, "properties", "features", "disableLocalAuth")?.text).toBe("true");
  });
});
