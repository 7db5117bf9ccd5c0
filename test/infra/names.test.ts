import { createHash } from "node:crypto";
import path from "node:path";
import type { Node } from "web-tree-sitter";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type BicepFile,
  INFRA_DIR,
  descendants,
  parameterDeclarations,
  parseBicepFile,
  valueAt,
  variableDeclarations,
} from "./bicep";
import { type BicepFunctions, type BicepValue, evaluate, userFunctions } from "./evaluate";

/**
 * `namePrefix` and every entry of `appRegions` flow into resource names, and Azure's naming rules differ per resource
 * type (a storage account takes only 3-24 lowercase letters and digits). These tests evaluate the name expressions of
 * main.bicep for documented and awkward inputs and check every resulting name against the rules of its type, as
 * listed in https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules .
 *
 * `resourceGroup()` and `uniqueString()` only exist at deployment time; they are bound to stand-ins here. The
 * stand-in for uniqueString returns what the real one does in shape (13 lowercase letters and digits, deterministic
 * per input), which is all the rules below depend on.
 */

const NAME_RULES: Readonly<Record<string, { pattern: RegExp; rule: string }>> = {
  storage: { pattern: /^[a-z0-9]{3,24}$/, rule: "3-24 lowercase letters and digits" },
  site: {
    pattern: /^(?=.{2,60}$)[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$/,
    rule: "2-60 letters, digits, hyphens; not starting or ending with a hyphen",
  },
  plan: { pattern: /^[a-zA-Z0-9-]{1,60}$/, rule: "1-60 letters, digits, hyphens" },
  identity: {
    pattern: /^[a-zA-Z0-9][a-zA-Z0-9_-]{2,127}$/,
    rule: "3-128 letters, digits, hyphens, underscores, starting with a letter or digit",
  },
  workspace: {
    pattern: /^(?=.{4,63}$)[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]$/,
    rule: "4-63 letters, digits, hyphens, starting and ending with a letter or digit",
  },
  insights: {
    pattern: /^[^%&\\?/\p{Cc}]{1,260}(?<![ .])$/u,
    rule: "1-260 characters without %&\\?/ or control characters, not ending in space or period",
  },
  deployment: { pattern: /^[-\w.()]{1,64}$/, rule: "1-64 letters, digits, underscores, parentheses, hyphens, periods" },
  location: { pattern: /^[a-z0-9]+$/, rule: "a region's programmatic name: lowercase letters and digits" },
};

let main: BicepFile;

beforeAll(async () => {
  main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
});

/** Stand-in for uniqueString(): 13 characters from the base-32 alphabet the real one uses, deterministic. */
function fakeUniqueString(args: BicepValue[]): string {
  const digest = createHash("sha256").update(JSON.stringify(args)).digest();
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  return Array.from(digest.subarray(0, 13), (byte) => alphabet[byte % 32] ?? "a").join("");
}

const DEPLOYMENT_FUNCTIONS: BicepFunctions = {
  resourceGroup: () => ({
    id: "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-leader",
    location: "swedencentral",
  }),
  uniqueString: fakeUniqueString,
};

/** The module declaration node whose path is `modulePath`. */
function moduleNode(modulePath: string): Node {
  const node = descendants(main.root, "module_declaration").find((module) =>
    module.namedChildren.some((child) => child.type === "string" && child.text === `'${modulePath}'`),
  );
  if (node === undefined) throw new Error(`main.bicep has no module '${modulePath}'`);
  return node;
}

/** Every resource name main.bicep produces for these parameters, labelled with the rule it must follow. */
function namesFor(params: {
  namePrefix: string;
  appRegions: string[];
}): { kind: string; what: string; name: BicepValue }[] {
  const functions = userFunctions(main, DEPLOYMENT_FUNCTIONS);
  const scope = new Map<string, BicepValue>();
  for (const [name, declaration] of parameterDeclarations(main)) {
    if (declaration.defaultValue === undefined) continue;
    try {
      scope.set(name, evaluate(declaration.defaultValue, scope, functions));
    } catch {
      // appRegions' default: tree-sitter-bicep splits a multi-line array item that ends in a call's `()`; it is
      // overridden below anyway.
    }
  }
  scope.set("namePrefix", params.namePrefix);
  scope.set("appRegions", params.appRegions);
  for (const [name, value] of variableDeclarations(main)) scope.set(name, evaluate(value, scope, functions));
  const at = (node: Node | undefined, where: string, inner: ReadonlyMap<string, BicepValue> = scope): BicepValue => {
    if (node === undefined) throw new Error(`main.bicep has no ${where}`);
    return evaluate(node, inner, functions);
  };

  const names: { kind: string; what: string; name: BicepValue }[] = [];
  const single = (modulePath: string) => moduleNode(modulePath).namedChildren.find((child) => child.type === "object");
  const coordination = single("modules/storageAccount.bicep");
  const monitoring = single("modules/monitoring.bicep");
  names.push({
    kind: "storage",
    what: "coordination storage",
    name: at(valueAt(coordination, "params", "name"), "coordination storage name"),
  });
  names.push({
    kind: "deployment",
    what: "coordination storage deployment",
    name: at(valueAt(coordination, "name"), "coordination deployment name"),
  });
  names.push({
    kind: "workspace",
    what: "Log Analytics workspace",
    name: at(valueAt(monitoring, "params", "workspaceName"), "workspace name"),
  });
  names.push({
    kind: "insights",
    what: "Application Insights",
    name: at(valueAt(monitoring, "params", "applicationInsightsName"), "Application Insights name"),
  });

  const loop = moduleNode("modules/functionApp.bicep").namedChildren.find((child) => child.type === "for_statement");
  const [variable, index] =
    loop?.namedChildren.find((child) => child.type === "for_loop_parameters")?.namedChildren ?? [];
  const body = loop?.childForFieldName("body") ?? undefined;
  if (variable === undefined || index === undefined || body === undefined)
    throw new Error("the app module is not a [for (region, i) in …] loop");
  params.appRegions.forEach((region, i) => {
    const inner = new Map([...scope, [variable.text, region], [index.text, i]]);
    const app = (kind: string, what: string, key: string) =>
      names.push({ kind, what: `app ${i} (${region}) ${what}`, name: at(valueAt(body, "params", key), key, inner) });
    names.push({
      kind: "deployment",
      what: `app ${i} (${region}) deployment`,
      name: at(valueAt(body, "name"), "app deployment name", inner),
    });
    app("site", "function app", "name");
    app("plan", "plan", "planName");
    app("identity", "identity", "identityName");
    app("storage", "host storage", "hostStorageName");
    app("location", "location", "location");
  });
  return names;
}

/** Names that break their type's rule, as readable lines (empty = all valid). */
function violations(names: { kind: string; what: string; name: BicepValue }[]): string[] {
  return names.flatMap(({ kind, what, name }) => {
    const rule = NAME_RULES[kind];
    if (rule === undefined) return [`${what}: no rule for ${kind}`];
    return typeof name === "string" && rule.pattern.test(name)
      ? []
      : [`${what} ${JSON.stringify(name)} is not ${rule.rule}`];
  });
}

describe("resource names from namePrefix and appRegions", () => {
  it("the parameters are documented as free text that is normalised, within the length bounds", () => {
    const prefix = parameterDeclarations(main).get("namePrefix");
    expect(prefix?.type).toBe("string");
    const text = main.source;
    expect(text).toMatch(/@minLength\(3\)\s*@maxLength\(10\)\s*param namePrefix string/);
    expect(text).toMatch(/@maxLength\(10\)\s*param appRegions string\[\]/);
  });

  it.each([
    { case: "the defaults", namePrefix: "leader", appRegions: ["swedencentral"] },
    { case: "a prefix with a hyphen", namePrefix: "my-app", appRegions: ["westeurope"] },
    { case: "a prefix with an underscore", namePrefix: "my_app", appRegions: ["westeurope"] },
    { case: "a prefix with capitals", namePrefix: "MyApp", appRegions: ["westeurope"] },
    { case: "a prefix with a space", namePrefix: "my app", appRegions: ["westeurope"] },
    { case: "a prefix of 10 digits and punctuation", namePrefix: "2026.v1-b!", appRegions: ["westeurope"] },
    { case: "a prefix of symbols only", namePrefix: "-_-", appRegions: ["westeurope"] },
    {
      case: "regions as display names",
      namePrefix: "leader",
      appRegions: ["Sweden Central", "North Europe", "West US 2"],
    },
    {
      case: "the longest region names, ten apps",
      namePrefix: "abcdefghij",
      appRegions: [
        "germanywestcentral",
        "australiasoutheast",
        "switzerlandnorth",
        "southafricanorth",
        "australiacentral2",
        "northcentralus",
        "newzealandnorth",
        "brazilsoutheast",
        "germanywestcentral",
        "swedencentral",
      ],
    },
  ])("$case: every name follows its resource type's rule", ({ namePrefix, appRegions }) => {
    expect(violations(namesFor({ namePrefix, appRegions }))).toEqual([]);
  });

  it("a region given as a display name deploys to that region's programmatic name", () => {
    const locations = namesFor({ namePrefix: "leader", appRegions: ["Sweden Central", "West US 2"] }).filter(
      (entry) => entry.kind === "location",
    );
    expect(locations.map((entry) => entry.name)).toEqual(["swedencentral", "westus2"]);
  });

  it("valid inputs keep the names they had before normalisation (no redeploy renames an existing account)", () => {
    const names = namesFor({ namePrefix: "leader", appRegions: ["swedencentral", "swedencentral"] });
    const byWhat = new Map(names.map((entry) => [entry.what, entry.name]));
    const token = fakeUniqueString([
      "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-leader",
      "leader",
    ]);
    expect(byWhat.get("coordination storage")).toBe(`stleaderco${token.slice(0, 8)}`);
    expect(byWhat.get("app 1 (swedencentral) function app")).toBe(`func-leader-swedencentral-1-${token.slice(0, 6)}`);
    expect(byWhat.get("app 1 (swedencentral) deployment")).toBe("app-1-swedencentral");
    const hostToken = fakeUniqueString([
      "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-leader",
      "leader",
      "swedencentral",
      "1",
    ]);
    expect(byWhat.get("app 1 (swedencentral) host storage")).toBe(`stleaderh1${hostToken.slice(0, 8)}`);
  });

  it("names that must be unique per app stay unique when a region repeats", () => {
    const names = namesFor({ namePrefix: "leader", appRegions: ["westeurope", "westeurope", "West Europe"] });
    for (const kind of ["site", "plan", "identity", "storage", "deployment"]) {
      const values = names.filter((entry) => entry.kind === kind).map((entry) => entry.name);
      expect(new Set(values).size, kind).toBe(values.length);
    }
  });

  it("the check itself rejects a name that breaks a rule", () => {
    expect(violations([{ kind: "storage", what: "x", name: "st-my-app" }])).toEqual([
      'x "st-my-app" is not 3-24 lowercase letters and digits',
    ]);
    expect(violations([{ kind: "site", what: "y", name: "func-a b" }])).toHaveLength(1);
  });
});
