import type { StandardSchemaV1 } from "@standard-schema/spec";
import { ConfigurationError } from "../../library/errors.js";

/** One problem a schema found: the dotted path of the field (empty for the value itself) and what is wrong. */
export interface SchemaIssue {
  path: string;
  message: string;
}

/** What {@link validateWith} found. */
export type Validated<T> = { ok: true; value: T } | { ok: false; issues: SchemaIssue[] };

/**
 * Validates `value` with any Standard Schema (zod 4, valibot, arktype, …), synchronously: the coordinator validates on
 * hot paths (every fold) where an async validation has no place.
 *
 * @throws ConfigurationError when the schema validates asynchronously (a task kind's definition is at fault).
 */
export function validateWith<T>(schema: StandardSchemaV1<unknown, T>, value: unknown, what: string): Validated<T> {
  const result = schema["~standard"].validate(value);
  if (result instanceof Promise)
    throw new ConfigurationError(
      `The schema of ${what} validated asynchronously; task kinds need schemas that validate synchronously.`,
    );
  if (result.issues === undefined) return { ok: true, value: result.value };
  return { ok: false, issues: result.issues.map(toIssue) };
}

/** Issues as one line, for reasons stored with failed items: `keyField: Required; format: Invalid option`. */
export function issuesText(issues: readonly SchemaIssue[]): string {
  return issues.map((issue) => (issue.path === "" ? issue.message : `${issue.path}: ${issue.message}`)).join("; ");
}

function toIssue(issue: StandardSchemaV1.Issue): SchemaIssue {
  const path = (issue.path ?? [])
    .map((segment) => String(typeof segment === "object" ? segment.key : segment))
    .join(".");
  return { path, message: issue.message };
}
