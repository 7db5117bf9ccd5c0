import { readFileSync } from "node:fs";
import path from "node:path";
import { expect, it } from "vitest";
import { listFiles } from "../../scripts/verification/infraCheck/compile";
import { TEMPLATE_ROOTS, VARIANT_DEPLOYER_ID } from "../../scripts/verification/infraCheck/repoInfra";
import { type Snapshot, describeCompiled, readSnapshot, roleAssignments, shortId, useCompiledInfra } from "./compiled";
import { REPO_ROOT } from "./paths";

/**
 * Built-in role definition ids this project may assign, with their names as in
 * https://learn.microsoft.com/azure/role-based-access-control/built-in-roles (Storage and Monitor categories).
 * Built-in role ids are the same in every Azure cloud.
 */
const DOCUMENTED_ROLES: Readonly<Record<string, string>> = {
  "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
  "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
  "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader",
  "974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
  "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3": "Storage Table Data Contributor",
  "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a": "Storage Queue Data Message Sender",
  "3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
};

/** Each role assignment as `<scope> <- <principal>: <role>`, sorted; an undocumented role id shows as itself. */
function granted(snapshot: Snapshot): string[] {
  return roleAssignments(snapshot)
    .map(({ scope, principal, roleId, principalType }) => {
      const who = principal.startsWith("identity:") ? "app identity" : `${principal} (${String(principalType)})`;
      return `${shortId(scope)} <- ${who}: ${DOCUMENTED_ROLES[roleId] ?? roleId}`;
    })
    .sort();
}

describeCompiled("role assignments (as the compiler evaluates them)", () => {
  const infra = useCompiledInfra();

  it("every role id in a template is a documented built-in role, named in a comment on its line", () => {
    const problems: string[] = [];
    for (const file of TEMPLATE_ROOTS.flatMap((root) => listFiles(REPO_ROOT, root, ".bicep")))
      readFileSync(path.join(REPO_ROOT, file), "utf8")
        .split("\n")
        .forEach((line, index) => {
          for (const [, id = ""] of line.matchAll(
            /'([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})'/g,
          )) {
            const role = DOCUMENTED_ROLES[id];
            if (role === undefined) problems.push(`${file}:${index + 1}: ${id} is not a documented built-in role`);
            else if (!line.includes(`// ${role}`)) problems.push(`${file}:${index + 1}: ${id} needs // ${role}`);
          }
        });
    expect(problems).toEqual([]);
  });

  it("the app identity gets exactly the least-privilege set: inputs read-only, blob contributor on the containers it writes, queue contributor on the coordination account, blob owner and table contributor on its own host storage, telemetry publisher", () => {
    const main = readSnapshot(infra(), "main");
    const coordination = String(main.outputs.coordinationStorageAccountName);
    const [host] = main.outputs.hostStorageAccountNames as string[];
    const insights = String(main.outputs.applicationInsightsName);
    const containers = `Microsoft.Storage/storageAccounts/${coordination}/blobServices/default/containers`;
    expect(granted(main)).toEqual(
      [
        `Microsoft.Insights/components/${insights} <- app identity: Monitoring Metrics Publisher`,
        // Job inputs are the user's data: the app may read them, never change or delete them.
        `${containers}/job-inputs <- app identity: Storage Blob Data Reader`,
        `${containers}/leases <- app identity: Storage Blob Data Contributor`,
        `${containers}/coordinator-state <- app identity: Storage Blob Data Contributor`,
        `${containers}/coordinator-system <- app identity: Storage Blob Data Contributor`,
        `Microsoft.Storage/storageAccounts/${coordination} <- app identity: Storage Queue Data Contributor`,
        `Microsoft.Storage/storageAccounts/${String(host)} <- app identity: Storage Blob Data Owner`,
        // The host writes diagnostic events to table storage, which Blob Data Owner does not cover (issue 12).
        `Microsoft.Storage/storageAccounts/${String(host)} <- app identity: Storage Table Data Contributor`,
      ].sort(),
    );
    for (const assignment of roleAssignments(main)) expect(assignment.principalType).toBe("ServicePrincipal");
  });

  it("with a deployer, it gets what npm run enqueue needs and no more, on the renamed containers and queue; each app gets its own grants", () => {
    const variant = readSnapshot(infra(), "variant");
    const coordination = String(variant.outputs.coordinationStorageAccountName);
    const containers = `Microsoft.Storage/storageAccounts/${coordination}/blobServices/default/containers`;
    const deployer = granted(variant).filter((line) => line.includes(VARIANT_DEPLOYER_ID));
    expect(deployer).toEqual(
      [
        `${containers}/i-renamed <- ${VARIANT_DEPLOYER_ID} (ServicePrincipal): Storage Blob Data Contributor`,
        `${containers}/y-renamed <- ${VARIANT_DEPLOYER_ID} (ServicePrincipal): Storage Blob Data Contributor`,
        `${containers}/s-renamed <- ${VARIANT_DEPLOYER_ID} (ServicePrincipal): Storage Blob Data Reader`,
        `Microsoft.Storage/storageAccounts/${coordination}/queueServices/default/queues/k-renamed <- ${VARIANT_DEPLOYER_ID} (ServicePrincipal): Storage Queue Data Message Sender`,
      ].sort(),
    );
    // Two apps: every grant of an app identity twice, one per identity.
    const identities = new Set(
      roleAssignments(variant)
        .map((assignment) => assignment.principal)
        .filter((principal) => principal.startsWith("identity:")),
    );
    expect(identities.size).toBe(2);
    expect(granted(variant).filter((line) => line.includes("app identity"))).toHaveLength(16);
    // Without a deployer (main.bicepparam) there is no such grant.
    expect(roleAssignments(readSnapshot(infra(), "main")).every((a) => a.principal.startsWith("identity:"))).toBe(true);
  });
});
