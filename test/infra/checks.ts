import {
  type BicepFile,
  callArguments,
  calledFunctionName,
  commentsOnLine,
  descendants,
  objectEntries,
  parameterDeclarations,
  resourceDeclarations,
  stringLiteral,
  valueAt,
  variableDeclarations,
} from "./bicep";
import { type BicepValue, evaluate } from "./evaluate";
import type { Node } from "web-tree-sitter";

/**
 * Structural checks over parsed templates. Each returns a list of human-readable violations (empty = pass), so a test
 * can assert `[]` on infra/ and a specific violation on a fixture that breaks the rule on purpose.
 */

/**
 * Oldest API version accepted per resource provider, and why. A provider that is not listed fails the check, so a new
 * resource type forces a deliberate choice here. Preview versions are never accepted.
 */
export const API_VERSION_FLOORS: Readonly<Record<string, { floor: string; reason: string }>> = {
  "Microsoft.Storage": {
    floor: "2023-05-01",
    reason:
      "GA version used by Azure Verified Modules; allowSharedKeyAccess, defaultToOAuthAuthentication, publicNetworkAccess",
  },
  "Microsoft.Web": {
    floor: "2024-04-01",
    reason:
      "functionAppConfig (Flex Consumption runtime, deployment storage, scale) as used by the official Flex Consumption samples",
  },
  "Microsoft.ManagedIdentity": {
    floor: "2023-01-31",
    reason: "first GA version after 2018-11-30 for user-assigned identities",
  },
  "Microsoft.Authorization": { floor: "2022-04-01", reason: "GA roleAssignments with principalType and description" },
  "Microsoft.Resources": {
    floor: "2022-09-01",
    reason: "GA resourceGroups, created by azd's subscription-scope entry",
  },
  "Microsoft.OperationalInsights": { floor: "2022-10-01", reason: "GA workspaces with features.disableLocalAuth" },
  "Microsoft.Insights": {
    floor: "2020-02-02",
    reason: "newest GA components version; DisableLocalAuth and WorkspaceResourceId",
  },
};

/** Resource declarations whose API version is preview, unparseable, older than its provider's floor, or unlisted. */
export function apiVersionViolations(files: readonly BicepFile[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    for (const resource of resourceDeclarations(file)) {
      const where = `${file.name}: ${resource.symbol} '${resource.type}@${resource.apiVersion}'`;
      const provider = resource.type.split("/")[0] ?? "";
      const rule = API_VERSION_FLOORS[provider];
      if (!/^\d{4}-\d{2}-\d{2}$/.test(resource.apiVersion)) {
        violations.push(`${where}: not a GA API version (preview or malformed)`);
      } else if (rule === undefined) {
        violations.push(`${where}: no API-version floor chosen for provider ${provider}`);
      } else if (resource.apiVersion < rule.floor) {
        violations.push(`${where}: older than the floor ${rule.floor} for ${provider}`);
      }
    }
  }
  return violations;
}

/**
 * Bicep functions that return keys, SAS tokens or connection strings with secrets (`listKeys`, `listAccountSas`, …).
 */
const SECRET_FUNCTION = /^list/i;
/** Text that only a secret-bearing connection string or SAS contains. */
const SECRET_TEXT = /AccountKey=|SharedAccessSignature=|SharedAccessKey=|[?&]sig=/i;
/** Properties through which ARM exposes keys. */
const SECRET_PROPERTIES = new Set([
  "keys",
  "primaryKey",
  "secondaryKey",
  "primaryMasterKey",
  "primaryConnectionString",
  "secondaryConnectionString",
]);
/** Legacy app settings that carry a key (the instrumentation key was the ingestion credential before Entra auth). */
const SECRET_SETTINGS = new Set([
  "APPINSIGHTS_INSTRUMENTATIONKEY",
  "AzureWebJobsDashboard",
  "WEBSITE_CONTENTAZUREFILECONNECTIONSTRING",
]);

/** Uses of account keys, SAS or secret connection strings anywhere in the templates. */
export function secretViolations(files: readonly BicepFile[]): string[] {
  const violations: string[] = [];
  for (const file of files) {
    const at = (line: number): string => `${file.name}:${line}`;
    for (const call of descendants(file.root, "call_expression")) {
      const name = calledFunctionName(call);
      if (SECRET_FUNCTION.test(name))
        violations.push(`${at(call.startPosition.row + 1)}: calls ${name}(), which returns secrets`);
    }
    for (const text of descendants(file.root, "string_content")) {
      const match = SECRET_TEXT.exec(text.text);
      if (match !== null)
        violations.push(`${at(text.startPosition.row + 1)}: string contains '${match[0]}' (a key or SAS)`);
    }
    for (const property of descendants(file.root, "property_identifier")) {
      if (SECRET_PROPERTIES.has(property.text))
        violations.push(`${at(property.startPosition.row + 1)}: reads .${property.text}, which holds a key`);
    }
    for (const { key, line } of appSettingKeys(file)) {
      if (SECRET_SETTINGS.has(key)) violations.push(`${at(line)}: app setting ${key} carries a key`);
    }
  }
  return violations;
}

/** An app setting as written in a template: its name, line and value expression. */
export interface AppSettingEntry {
  readonly key: string;
  readonly line: number;
  readonly value: Node;
}

/** The keys of every `Microsoft.Web/sites/config` 'appsettings' resource of a file, with their lines. */
export function appSettingKeys(file: BicepFile): AppSettingEntry[] {
  return appSettingsObjects([file]).flatMap((object) => object.entries);
}

/** The `properties` object of each `Microsoft.Web/sites/config` resource named 'appsettings', as entries. */
export function appSettingsObjects(files: readonly BicepFile[]): { file: BicepFile; entries: AppSettingEntry[] }[] {
  const found: { file: BicepFile; entries: AppSettingEntry[] }[] = [];
  for (const file of files) {
    for (const resource of resourceDeclarations(file)) {
      if (
        resource.type !== "Microsoft.Web/sites/config" ||
        stringLiteral(valueAt(resource.body, "name")) !== "appsettings"
      )
        continue;
      const properties = valueAt(resource.body, "properties");
      const entries = properties?.type === "object" ? objectEntries(properties) : [];
      found.push({
        file,
        entries: entries.map(({ key, value, property }) => ({ key, value, line: property.startPosition.row + 1 })),
      });
    }
  }
  return found;
}

/**
 * Built-in role definition ids this project may assign, with their names as in
 * https://learn.microsoft.com/azure/role-based-access-control/built-in-roles (Storage and Monitor categories).
 * Built-in role ids are the same in every Azure cloud.
 */
export const DOCUMENTED_ROLES: Readonly<Record<string, string>> = {
  "b7e6dc6d-f1e8-4753-8033-0f276bb0955b": "Storage Blob Data Owner",
  "ba92f5b4-2d11-453d-a403-e96b0029c9fe": "Storage Blob Data Contributor",
  "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1": "Storage Blob Data Reader",
  "974c5e8b-45b9-4653-ba55-5f855dd0fb88": "Storage Queue Data Contributor",
  "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3": "Storage Table Data Contributor",
  "8a0f0c08-91a1-4084-bc3d-661d67233fed": "Storage Queue Data Message Processor",
  "c6a89b2d-59bc-44d0-9896-0f6e12d7b80a": "Storage Queue Data Message Sender",
  "19e7f393-937e-4f77-808e-94535e297925": "Storage Queue Data Reader",
  "3913510d-42f4-4e42-8a64-420c390055eb": "Monitoring Metrics Publisher",
};

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** One role assignment, resolved: which role, on which resource (by symbol and type), for whom. */
export interface RoleAssignment {
  readonly file: string;
  readonly symbol: string;
  readonly roleName: string;
  readonly scopeSymbol: string;
  readonly scopeType: string;
  /** A managed identity ('ServicePrincipal'), or a person or pipeline the deployment names (a principalType param). */
  readonly principal: "managed identity" | "named principal";
}

/** The principal types a deployment may name for a person or a pipeline (a `principalType` parameter allows these). */
const NAMED_PRINCIPAL_TYPES = new Set(["User", "Group", "ServicePrincipal"]);

/**
 * Resolves every `Microsoft.Authorization/roleAssignments` resource, and reports: role ids that are not documented
 * built-in roles or cannot be resolved to a literal id; role-id literals without a same-line comment naming the role;
 * assignments without a resource scope, or whose principalType is neither 'ServicePrincipal' (a managed identity) nor a
 * parameter that allows only 'User', 'Group' and 'ServicePrincipal' (a person or pipeline the deployment names).
 */
export function roleAssignments(files: readonly BicepFile[]): { assignments: RoleAssignment[]; violations: string[] } {
  const assignments: RoleAssignment[] = [];
  const violations: string[] = [];
  for (const file of files) {
    const scope = new Map<string, BicepValue>();
    for (const [name, value] of variableDeclarations(file)) {
      try {
        scope.set(name, evaluate(value, scope));
      } catch {
        // Not a constant (e.g. refers to a resource); role ids never are.
      }
    }
    for (const literal of descendants(file.root, "string")) {
      const value = stringLiteral(literal);
      if (value === undefined || !GUID.test(value)) continue;
      const roleName = DOCUMENTED_ROLES[value.toLowerCase()];
      const line = literal.startPosition.row + 1;
      if (roleName === undefined) {
        violations.push(`${file.name}:${line}: ${value} is not a documented built-in role this project may assign`);
      } else if (!commentsOnLine(file, literal).some((comment) => comment.includes(roleName))) {
        violations.push(`${file.name}:${line}: role id ${value} needs a comment naming it '${roleName}'`);
      }
    }
    const resources = resourceDeclarations(file);
    for (const resource of resources.filter((r) => r.type === "Microsoft.Authorization/roleAssignments")) {
      const where = `${file.name}: ${resource.symbol}`;
      const definition = valueAt(resource.body, "properties", "roleDefinitionId");
      const args = definition?.type === "call_expression" ? callArguments(definition) : [];
      const [typeArg, idArg] = args;
      let roleId: BicepValue | undefined;
      try {
        roleId = idArg === undefined ? undefined : evaluate(idArg, scope);
      } catch {
        roleId = undefined;
      }
      const roleName = typeof roleId === "string" ? DOCUMENTED_ROLES[roleId.toLowerCase()] : undefined;
      if (
        definition?.type !== "call_expression" ||
        !["subscriptionResourceId", "resourceId"].includes(calledFunctionName(definition)) ||
        stringLiteral(typeArg) !== "Microsoft.Authorization/roleDefinitions" ||
        roleName === undefined
      ) {
        violations.push(
          `${where}: roleDefinitionId must be subscriptionResourceId('Microsoft.Authorization/roleDefinitions', <documented built-in role id>), got ${definition?.text ?? "nothing"}`,
        );
        continue;
      }
      const principalType = valueAt(resource.body, "properties", "principalType");
      const named = principalType?.type === "identifier" && namedPrincipalParameter(file, principalType.text);
      if (stringLiteral(principalType) !== "ServicePrincipal" && !named) {
        violations.push(
          `${where}: principalType must be 'ServicePrincipal' (a managed identity), or a parameter allowing only 'User', 'Group', 'ServicePrincipal'`,
        );
      }
      const scopeSymbol = valueAt(resource.body, "scope")?.text ?? "";
      const scopeResource = resources.find((r) => r.symbol === scopeSymbol);
      if (scopeResource === undefined) {
        violations.push(
          `${where}: scope must be a resource of this file (least privilege: no resource-group or subscription scope)`,
        );
        continue;
      }
      assignments.push({
        file: file.name,
        symbol: resource.symbol,
        roleName,
        scopeSymbol,
        scopeType: scopeResource.type,
        principal: named ? "named principal" : "managed identity",
      });
    }
  }
  return { assignments, violations };
}

/** Whether `name` is a parameter of `file` whose `@allowed` values are principal types a deployment may name. */
function namedPrincipalParameter(file: BicepFile, name: string): boolean {
  const allowed = parameterDeclarations(file).get(name)?.decorators.get("allowed")?.[0];
  if (allowed === undefined) return false;
  const values = evaluate(allowed, new Map());
  return (
    Array.isArray(values) &&
    values.length > 0 &&
    values.every((value) => typeof value === "string" && NAMED_PRINCIPAL_TYPES.has(value))
  );
}

/** Storage accounts (deployed, not `existing`) that are not hardened, and containers open to anonymous reads. */
export function storageHardeningViolations(files: readonly BicepFile[]): string[] {
  const required: readonly [string, string][] = [
    ["allowSharedKeyAccess", "false"],
    ["allowBlobPublicAccess", "false"],
    ["supportsHttpsTrafficOnly", "true"],
    ["minimumTlsVersion", "'TLS1_2'"],
  ];
  const violations: string[] = [];
  for (const file of files) {
    for (const resource of resourceDeclarations(file)) {
      if (resource.existing) continue;
      if (resource.type === "Microsoft.Storage/storageAccounts") {
        for (const [property, expected] of required) {
          const actual = valueAt(resource.body, "properties", property)?.text;
          if (actual !== expected)
            violations.push(
              `${file.name}: ${resource.symbol}.properties.${property} must be ${expected}, is ${actual ?? "unset"}`,
            );
        }
      }
      if (resource.type === "Microsoft.Storage/storageAccounts/blobServices/containers") {
        const access = valueAt(resource.body, "properties", "publicAccess")?.text;
        if (access !== "'None'")
          violations.push(
            `${file.name}: ${resource.symbol}.properties.publicAccess must be 'None', is ${access ?? "unset"}`,
          );
      }
    }
  }
  return violations;
}
