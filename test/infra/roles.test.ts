import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  FIXTURES_DIR,
  INFRA_DIR,
  listFiles,
  moduleDeclarations,
  parseBicepFile,
  resourceDeclarations,
  valueAt,
} from "./bicep";
import { DOCUMENTED_ROLES, appSettingsObjects, roleAssignments } from "./checks";

describe("role assignments", () => {
  it("the documented role table has the ids Azure gives these built-in roles (Azure built-in roles reference)", () => {
    expect(DOCUMENTED_ROLES["b7e6dc6d-f1e8-4753-8033-0f276bb0955b"]).toBe("Storage Blob Data Owner");
    expect(DOCUMENTED_ROLES["974c5e8b-45b9-4653-ba55-5f855dd0fb88"]).toBe("Storage Queue Data Contributor");
    expect(DOCUMENTED_ROLES["3913510d-42f4-4e42-8a64-420c390055eb"]).toBe("Monitoring Metrics Publisher");
  });

  it("use documented built-in role ids, each named in a comment, assigned to the identity on one resource", async () => {
    const templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
    const { violations, assignments } = roleAssignments(templates);
    expect(violations).toEqual([]);
    expect(assignments).not.toHaveLength(0);
  });

  it("grant exactly the least-privilege set: inputs read-only, blob contributor only on the containers the app writes, queue contributor on coordination, blob owner and table contributor on own host storage, telemetry publisher", async () => {
    const templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
    const granted = roleAssignments(templates)
      .assignments.filter(({ principal }) => principal === "managed identity")
      .map(({ scopeSymbol, scopeType, roleName }) => `${scopeSymbol} (${scopeType}): ${roleName}`)
      .sort();
    expect(granted).toEqual([
      "applicationInsights (Microsoft.Insights/components): Monitoring Metrics Publisher",
      "coordinationStorage (Microsoft.Storage/storageAccounts): Storage Queue Data Contributor",
      "hostStorage (Microsoft.Storage/storageAccounts): Storage Blob Data Owner",
      // The host writes diagnostic events to table storage, which Blob Data Owner does not cover (issue 12).
      "hostStorage (Microsoft.Storage/storageAccounts): Storage Table Data Contributor",
      // Job inputs are the user's data: the app may read them, never change or delete them.
      "inputContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Reader",
      "leaseContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Contributor",
      "stateContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Contributor",
      "systemContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Contributor",
    ]);
  });

  it("the deployer (optional) gets what npm run enqueue needs and no more: write inputs and submissions, read state, send wake-ups", async () => {
    const templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
    const granted = roleAssignments(templates)
      .assignments.filter(({ principal }) => principal === "named principal")
      .map(({ file, scopeSymbol, scopeType, roleName }) => `${file} ${scopeSymbol} (${scopeType}): ${roleName}`)
      .sort();
    expect(granted).toEqual([
      "infra/modules/deployerRoles.bicep inputContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Contributor",
      "infra/modules/deployerRoles.bicep stateContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Reader",
      "infra/modules/deployerRoles.bicep systemContainer (Microsoft.Storage/storageAccounts/blobServices/containers): Storage Blob Data Contributor",
      "infra/modules/deployerRoles.bicep wakeQueue (Microsoft.Storage/storageAccounts/queueServices/queues): Storage Queue Data Message Sender",
    ]);
    // Deployed only when main.bicep names a deployer, and to the containers and queue the app settings name.
    const main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
    const module = moduleDeclarations(main).find((m) => m.path === "modules/deployerRoles.bicep");
    expect(main.source).toContain(
      "module deployerRoles 'modules/deployerRoles.bicep' = if (!empty(deployerPrincipalId))",
    );
    for (const [param, value] of [
      ["principalId", "deployerPrincipalId"],
      ["inputContainerName", "inputContainer"],
      ["systemContainerName", "systemContainer"],
      ["stateContainerName", "stateContainer"],
      ["wakeQueueName", "wakeQueue"],
      ["coordinationStorageName", "coordinationStorage.outputs.name"],
    ] as const)
      expect(valueAt(module?.body, "params", param)?.text, param).toBe(value);
  });

  it("the container-scoped grants name the same containers as the app settings, in the shared coordination account", async () => {
    const roles = await parseBicepFile(path.join(INFRA_DIR, "modules", "appRoles.bicep"));
    const app = await parseBicepFile(path.join(INFRA_DIR, "modules", "functionApp.bicep"));
    const settings = appSettingsObjects([app])[0]?.entries ?? [];
    const resources = resourceDeclarations(roles);
    const passedToRoles = valueAt(moduleDeclarations(app).find((m) => m.path === "appRoles.bicep")?.body, "params");
    const blobService = resources.find(
      (r) => r.type === "Microsoft.Storage/storageAccounts/blobServices" && r.existing,
    );
    expect(valueAt(blobService?.body, "parent")?.text).toBe("coordinationStorage");
    for (const [symbol, setting] of [
      ["inputContainer", "INPUT_CONTAINER"],
      ["leaseContainer", "LEASE_CONTAINER"],
      ["stateContainer", "STATE_CONTAINER"],
      ["systemContainer", "SYSTEM_CONTAINER"],
    ] as const) {
      const container = resources.find((r) => r.symbol === symbol && r.existing);
      expect(container?.type, symbol).toBe("Microsoft.Storage/storageAccounts/blobServices/containers");
      expect(valueAt(container?.body, "parent")?.text, symbol).toBe(blobService?.symbol);
      const param = valueAt(container?.body, "name")?.text ?? "";
      // What functionApp.bicep passes for that parameter is exactly what it sets the app setting to.
      expect(valueAt(passedToRoles, param)?.text, symbol).toBe(
        settings.find((entry) => entry.key === setting)?.value.text,
      );
    }
  });

  it("the role scopes are wired to the right accounts: the shared coordination account and the app's own host storage", async () => {
    const roles = await parseBicepFile(path.join(INFRA_DIR, "modules", "appRoles.bicep"));
    const app = await parseBicepFile(path.join(INFRA_DIR, "modules", "functionApp.bicep"));
    const main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
    const existingName = (symbol: string) =>
      valueAt(resourceDeclarations(roles).find((r) => r.symbol === symbol && r.existing)?.body, "name")?.text;
    const passed = (file: typeof main, modulePath: string, param: string) =>
      valueAt(moduleDeclarations(file).find((m) => m.path === modulePath)?.body, "params", param)?.text;

    expect(existingName("coordinationStorage")).toBe("coordinationStorageName");
    expect(existingName("hostStorage")).toBe("hostStorageName");
    expect(existingName("applicationInsights")).toBe("applicationInsightsName");
    expect(passed(app, "appRoles.bicep", "coordinationStorageName")).toBe("coordinationStorageName");
    expect(passed(app, "appRoles.bicep", "hostStorageName")).toBe("hostStorage.outputs.name");
    expect(passed(app, "appRoles.bicep", "principalId")).toBe("identity.properties.principalId");
    expect(passed(main, "modules/functionApp.bicep", "coordinationStorageName")).toBe(
      "coordinationStorage.outputs.name",
    );
    expect(passed(main, "modules/functionApp.bicep", "applicationInsightsName")).toBe(
      "monitoring.outputs.applicationInsightsName",
    );
  });

  it("the check rejects an undocumented role, a misnamed role comment, a raw id string, a user principal and a group-wide scope (fixtures/wrong-role.bicep)", async () => {
    const { violations, assignments } = roleAssignments([
      await parseBicepFile(path.join(FIXTURES_DIR, "wrong-role.bicep")),
    ]);
    expect(assignments).toEqual([]);
    expect(violations).toEqual([
      expect.stringMatching(
        /wrong-role\.bicep:6: 8e3af657-a8ff-443c-a75c-2fe8c4bcb635 is not a documented built-in role/,
      ),
      expect.stringMatching(
        /wrong-role\.bicep:7: role id ba92f5b4-.* needs a comment naming it 'Storage Blob Data Contributor'/,
      ),
      expect.stringMatching(/ownerOnStorage: roleDefinitionId must be subscriptionResourceId/),
      expect.stringMatching(/rawIdAtGroup: roleDefinitionId must be subscriptionResourceId/),
      expect.stringMatching(/contributorAtGroup: principalType must be 'ServicePrincipal'/),
      expect.stringMatching(/contributorAtGroup: scope must be a resource of this file/),
    ]);
  });
});
