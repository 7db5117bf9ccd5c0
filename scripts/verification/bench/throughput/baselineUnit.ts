import { groupRecords, mergeGroups, type GroupByPartial } from "../../../../src/groupBy/groupBy";
import { groupByParamsSchema } from "../../../../src/groupBy/groupBySchema";
import type { ItemInput } from "../../../../src/coordination/ports/messages";
import type { BaselineResult, BaselineWork } from "./baselineProtocol";

/**
 * What a baseline worker does with one work message, between receiving it and sending its result: parse it, read
 * each item's input (`readInput`: inline text, or the blob it names), `groupRecords` each item one after another, as
 * the app's worker does a unit's, and merge the unit's partials. Shared by the worker processes (./baselineWorker.ts)
 * and the CPU benchmark of a unit (../unit.ts), so both time the same code.
 */
export async function baselineUnitResult(
  text: string,
  readInput: (input: ItemInput) => string | Promise<string>,
): Promise<BaselineResult> {
  const message = JSON.parse(text) as BaselineWork;
  const params = groupByParamsSchema.parse(message.params);
  const items = message.v === 1 ? [message.input] : message.inputs;
  let partial: GroupByPartial = [];
  for (const input of items) partial = mergeGroups(partial, groupRecords(await readInput(input), params));
  return { jobId: message.jobId, first: message.v === 1 ? message.item : message.first, count: items.length, partial };
}
