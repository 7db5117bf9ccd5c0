import { expect, it } from "vitest";
import { type Snapshot, describeCompiled, ofType, readSnapshot, useCompiledInfra } from "./compiled";

/**
 * `namePrefix` and every entry of `appRegions` flow into resource names, and Azure's naming rules differ per resource
 * type (a storage account takes only 3-24 lowercase letters and digits). test/infra/fixtures/names.bicep deploys
 * main.bicep once per awkward input; the compiler evaluates every name (its own uniqueString, toLower, filter …), and
 * each is checked against the rules of its type, as listed in
 * https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules .
 */

const NAME_RULES: Readonly<Record<string, { pattern: RegExp; rule: string }>> = {
  "Microsoft.Storage/storageAccounts": { pattern: /^[a-z0-9]{3,24}$/, rule: "3-24 lowercase letters and digits" },
  "Microsoft.Web/sites": {
    pattern: /^(?=.{2,60}$)[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$/,
    rule: "2-60 letters, digits, hyphens; not starting or ending with a hyphen",
  },
  "Microsoft.Web/serverfarms": { pattern: /^[a-zA-Z0-9-]{1,60}$/, rule: "1-60 letters, digits, hyphens" },
  "Microsoft.ManagedIdentity/userAssignedIdentities": {
    pattern: /^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$/,
    rule: "3-128 letters, digits, hyphens, underscores, starting with a letter or digit",
  },
  "Microsoft.OperationalInsights/workspaces": {
    pattern: /^(?=.{4,63}$)[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]$/,
    rule: "4-63 letters, digits, hyphens, starting and ending with a letter or digit",
  },
  "Microsoft.Insights/components": {
    pattern: /^[^%&\\?/\p{Cc}]{1,260}(?<![ .])$/u,
    rule: "1-260 characters without %&\\?/ or control characters, not ending in space or period",
  },
};

/** A region's programmatic name, as a resource's location must be. */
const LOCATION = /^[a-z0-9]+$/;

/** Names that break their type's rule, and locations that are not programmatic names, as readable lines. */
function violations(snapshot: Snapshot): string[] {
  const found: string[] = [];
  for (const [type, { pattern, rule }] of Object.entries(NAME_RULES))
    for (const { name } of ofType(snapshot, type))
      if (!pattern.test(name)) found.push(`${type} ${JSON.stringify(name)} is not ${rule}`);
  for (const resource of snapshot.predictedResources)
    if (resource.location !== undefined && !LOCATION.test(resource.location))
      found.push(`${resource.type} ${resource.name} is in ${JSON.stringify(resource.location)}`);
  return found;
}

describeCompiled("resource names from namePrefix and appRegions (evaluated by Bicep)", () => {
  const infra = useCompiledInfra();

  it("every case of fixtures/names.bicep (prefixes with hyphens, underscores, capitals, spaces, punctuation or symbols only; display-name regions; ten apps in the longest regions) names every resource within its type's rule", () => {
    const names = readSnapshot(infra(), "names");
    // Each prefix reduced to its lowercase letters and digits ('my-app', 'my_app', 'MyApp', 'my app' all to 'myapp',
    // which name the same resources), or 'app' when nothing is left of it.
    const prefixes = new Set(ofType(names, "Microsoft.Web/sites").map((site) => site.name.split("-")[1]));
    expect([...prefixes].sort()).toEqual(["2026v1b", "abcdefghij", "app", "leader", "myapp"]);
    expect(violations(names)).toEqual([]);
  });

  it("the check itself names a name that breaks a rule and a display-name location", () => {
    const broken: Snapshot = {
      outputs: {},
      predictedResources: [
        { id: "a", type: "Microsoft.Storage/storageAccounts", name: "st-my-app", apiVersion: "x" },
        { id: "b", type: "Microsoft.Web/sites", name: "func-a b", apiVersion: "x", location: "West Europe" },
      ],
    };
    expect(violations(broken)).toEqual([
      'Microsoft.Storage/storageAccounts "st-my-app" is not 3-24 lowercase letters and digits',
      'Microsoft.Web/sites "func-a b" is not 2-60 letters, digits, hyphens; not starting or ending with a hyphen',
      'Microsoft.Web/sites func-a b is in "West Europe"',
    ]);
  });

  it("a region given as a display name deploys to that region's programmatic name", () => {
    const locations = new Set(
      ofType(readSnapshot(infra(), "names"), "Microsoft.Web/sites").map((site) => site.location),
    );
    for (const region of ["swedencentral", "northeurope", "westus2", "westeurope"]) expect(locations).toContain(region);
  });

  it("valid inputs keep the names they had before normalisation (no redeploy renames an existing account)", () => {
    const main = readSnapshot(infra(), "main");
    const coordination = String(main.outputs.coordinationStorageAccountName);
    const token = /^stleaderco([a-z0-9]{8})$/.exec(coordination)?.[1] ?? "";
    expect(token).toHaveLength(8);
    expect(main.outputs.appNames).toEqual([`func-leader-swedencentral-0-${token.slice(0, 6)}`]);
    expect(main.outputs.hostStorageAccountNames).toEqual([expect.stringMatching(/^stleaderh0[a-z0-9]{8}$/)]);
  });

  it("names that must be unique per app stay unique when a region repeats ('Sweden Central' and 'swedencentral')", () => {
    const variant = readSnapshot(infra(), "variant");
    for (const type of [
      "Microsoft.Web/sites",
      "Microsoft.Web/serverfarms",
      "Microsoft.ManagedIdentity/userAssignedIdentities",
      "Microsoft.Storage/storageAccounts",
    ]) {
      const names = ofType(variant, type).map((resource) => resource.name);
      expect(names.length, type).toBeGreaterThan(1);
      expect(new Set(names).size, type).toBe(names.length);
    }
    expect(ofType(variant, "Microsoft.Web/sites").map((site) => site.name)).toEqual([
      expect.stringMatching(/^func-myapp-swedencentral-0-/),
      expect.stringMatching(/^func-myapp-swedencentral-1-/),
    ]);
  });
});
