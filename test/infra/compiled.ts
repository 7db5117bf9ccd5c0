import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe } from "vitest";
import { HOW_TO_GET_BICEP, restoredPath } from "../../scripts/verification/infraCheck/bicepCli";
import { type CompiledInfra, compileRepoInfra } from "../../scripts/verification/infraCheck/repoInfra";

/**
 * The infra tests read what the real Bicep compiler produced (issue 34): the ARM JSON of every template and the
 * compiler's snapshots (`bicep snapshot`: every resource a deployment would create, with names, properties, role
 * assignments and scopes resolved as far as they are known before deployment). One compile serves the whole run and
 * the next ones: `npm run infra:check` and these tests share `.bicep-cli/compiled/<hash of the inputs>/`.
 */

/** A resource as `bicep snapshot` predicts it. Values it cannot know before deployment stay ARM expressions. */
export interface PredictedResource {
  readonly id: string;
  readonly type: string;
  readonly name: string;
  readonly apiVersion: string;
  readonly location?: string;
  readonly kind?: string;
  readonly sku?: Record<string, unknown>;
  readonly tags?: Record<string, string>;
  readonly identity?: Record<string, unknown>;
  readonly properties?: Record<string, unknown>;
}

export interface Snapshot {
  readonly predictedResources: PredictedResource[];
  readonly outputs: Record<string, unknown>;
}

/** The snapshots repoInfra.ts makes (`main`: infra/main.bicepparam as deployed; see repoSnapshots()). */
export type SnapshotName = "main" | "variant" | "azd" | "names";

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether a compiler can be had here: one on PATH, one restored already, or `dotnet` to restore it. */
export function bicepAvailable(): boolean {
  if (existsSync(restoredPath())) return true;
  return (process.env.PATH ?? "")
    .split(path.delimiter)
    .some((dir) => dir !== "" && (isExecutable(path.join(dir, "bicep")) || isExecutable(path.join(dir, "dotnet"))));
}

const available = bicepAvailable();
if (!available && process.env.CI !== undefined && process.env.CI !== "")
  throw new Error(`CI is set, and the infra tests never skip there. ${HOW_TO_GET_BICEP}`);

/**
 * `describe` for tests that need the compiler: skipped, saying how to get it, on a machine with neither `bicep` nor
 * `dotnet`; never skipped under CI (importing this file fails there instead).
 */
export function describeCompiled(name: string, body: () => void): void {
  if (!available) {
    describe.skip(`${name} (skipped: ${HOW_TO_GET_BICEP})`, body);
    return;
  }
  describe(name, body);
}

let compiled: Promise<CompiledInfra> | undefined;

/** This repository's compiled templates (compiled on first use in this run, or read back from an earlier one). */
export function compiledInfra(): Promise<CompiledInfra> {
  compiled ??= compileRepoInfra();
  return compiled;
}

/** Compiles (or reads back) before the file's tests; a cold compile with a NuGet restore takes a while. */
export function useCompiledInfra(): () => CompiledInfra {
  let value: CompiledInfra | undefined;
  beforeAll(async () => {
    value = await compiledInfra();
  }, 600_000);
  return () => {
    if (value === undefined) throw new Error("the templates were not compiled (beforeAll failed)");
    return value;
  };
}

/** A snapshot of the compile. */
export function readSnapshot(infra: CompiledInfra, name: SnapshotName): Snapshot {
  return JSON.parse(readFileSync(path.join(infra.dir, "snapshots", `${name}.snapshot.json`), "utf8")) as Snapshot;
}

/** The ARM JSON of one template, by its path in the repository (`infra/main.bicep`). */
export function readTemplate(infra: CompiledInfra, template: string): Record<string, unknown> {
  const file = path.join(infra.dir, template.replace(/\.bicep$/, ".json"));
  return JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
}

/** Resources of a type (`Microsoft.Web/sites`). */
export function ofType(snapshot: Snapshot, type: string): PredictedResource[] {
  return snapshot.predictedResources.filter((resource) => resource.type === type);
}

/** The one resource of a type; throws naming how many there were otherwise. */
export function only(snapshot: Snapshot, type: string): PredictedResource {
  const found = ofType(snapshot, type);
  const [resource] = found;
  if (found.length !== 1 || resource === undefined) throw new Error(`expected one ${type}, found ${found.length}`);
  return resource;
}

/** A role assignment, read from the snapshot: which role, on what (the scope's resource id), for whom. */
export interface PredictedRoleAssignment {
  readonly roleId: string;
  readonly scope: string;
  /** The literal principal id, or the identity whose principal id it is (`identity:<name>`). */
  readonly principal: string;
  readonly principalType: unknown;
}

/** Every role assignment of a snapshot. */
export function roleAssignments(snapshot: Snapshot): PredictedRoleAssignment[] {
  return ofType(snapshot, "Microsoft.Authorization/roleAssignments").map((resource) => {
    const properties = resource.properties ?? {};
    const definition = String(properties.roleDefinitionId);
    const principal = String(properties.principalId);
    const identity = /userAssignedIdentities\/([^']+)'[^)]*\)\.principalId\]$/.exec(principal)?.[1];
    return {
      roleId: definition.slice(definition.lastIndexOf("/") + 1),
      // `extensionResourceId('<scope>', 'Microsoft.Authorization/roleAssignments', …)` while the name waits for a
      // principal id, `<scope>/providers/Microsoft.Authorization/roleAssignments/<guid>` once it is known.
      scope:
        /^\[extensionResourceId\('([^']+)'/.exec(resource.id)?.[1] ??
        /^(.+)\/providers\/Microsoft\.Authorization\/roleAssignments\/[^/]+$/.exec(resource.id)?.[1] ??
        `unresolved: ${resource.id}`,
      principal: identity === undefined ? principal : `identity:${identity}`,
      principalType: properties.principalType,
    };
  });
}

/** The part of a resource id after the resource group, readable in expectations (`Microsoft.Storage/…/leases`). */
export function shortId(id: string): string {
  return id.replace(/^\/subscriptions\/[^/]+\/resourceGroups\/[^/]+\/providers\//, "");
}

/** Every string at a `query` key anywhere inside `value`. */
function queriesIn(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(queriesIn);
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    key === "query" && typeof inner === "string" ? [inner] : queriesIn(inner),
  );
}

/** The queries of the alert rules, with their thresholds as the snapshot deploys them. */
export function alertQueries(snapshot: Snapshot): string[] {
  return ofType(snapshot, "Microsoft.Insights/scheduledQueryRules").flatMap((rule) => queriesIn(rule.properties));
}

/** The workbook's content (its serializedData, parsed) and the queries of its panels. */
export function workbookContent(snapshot: Snapshot): { content: unknown; queries: string[] } {
  const content = JSON.parse(
    String(only(snapshot, "Microsoft.Insights/workbooks").properties?.serializedData),
  ) as unknown;
  return { content, queries: queriesIn(content) };
}
