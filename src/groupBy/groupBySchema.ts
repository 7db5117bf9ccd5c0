import { z } from "zod";
import type { GroupByParams, GroupByPartial } from "./groupByTypes.js";

/**
 * The group-by kind's schemas (zod, kept out of the package's public declarations: users never need zod's types).
 * They validate exactly the types `groupByTypes.ts` declares.
 */

/** Parameters of a group-by job (validated at submission and in the worker). */
export const groupByParamsSchema = z.strictObject({
  /** How each item's records are written. */
  format: z.enum(["csv", "ndjson"]),
  /** Field whose value names the group. */
  keyField: z.string().min(1).max(256),
  /** Numeric field aggregated per group. */
  valueField: z.string().min(1).max(256),
}) satisfies z.ZodType<GroupByParams>;

/** One group: `[key, count, sumMicros, min, max]` (see {@link GroupByPartial}). */
const groupTuple = z.tuple([
  z.string(),
  z.number().int().min(0),
  z.string().regex(/^-?\d+$/),
  z.number(),
  z.number(),
]) satisfies z.ZodType<GroupByPartial[number]>;

/** Whether one entry is a valid group tuple: the fast check of {@link groupTuple}, for aggregates of many groups. */
function isGroupTuple(value: unknown): boolean {
  if (!Array.isArray(value) || value.length !== 5) return false;
  const [key, count, sum, min, max] = value as unknown[];
  return (
    typeof key === "string" &&
    Number.isSafeInteger(count) &&
    (count as number) >= 0 &&
    typeof sum === "string" &&
    /^-?\d+$/.test(sum) &&
    Number.isFinite(min) &&
    Number.isFinite(max)
  );
}

/**
 * A group-by partial: an array of group tuples. Checked entry by entry with a plain loop — a job's aggregate may hold
 * 200,000 groups, and the leader validates it on every fold — with zod naming the path of the first bad entry.
 */
export const groupByPartialSchema = z.custom<GroupByPartial>().superRefine((value, context) => {
  if (!Array.isArray(value)) {
    context.addIssue({ code: "custom", message: "expected an array of [key, count, sumMicros, min, max] tuples" });
    return;
  }
  const bad = value.findIndex((entry) => !isGroupTuple(entry));
  if (bad === -1) return;
  const parsed = groupTuple.safeParse(value[bad]);
  for (const issue of parsed.error?.issues ?? [{ path: [], message: "not a group tuple" }])
    context.addIssue({ code: "custom", path: [bad, ...issue.path], message: issue.message });
});
