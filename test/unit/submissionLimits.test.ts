import { z } from "zod";
import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { parseManifestLine } from "../../src/coordination/jobs/manifest";
import type { UnitWorkMessage } from "../../src/coordination/ports/messages";
import { MAX_ITEMS_PER_JOB, validateSubmission } from "../../src/coordination/jobs/submit";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";

/**
 * An inline item travels JSON-escaped — quotes, backslashes and line breaks take two bytes, other control characters
 * six — inside a work message, which goes base64-encoded into a queue message of at most 64 KiB. The limits below are
 * the README's ("Submitting work"): what a submission may hold so that every work message fits.
 */
const ITEM_LIMIT = 40 * 1024; // an item's JSON form, {"inline": "…"}
const PARAMS_LIMIT = 4 * 1024; // the params' JSON form
const QUEUE_MESSAGE_LIMIT = 64 * 1024; // base64 text of a queue message

const params = { format: "csv", keyField: "region", valueField: "amount" };
const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** Quoted CSV, as spreadsheets export it, of `rawBytes` bytes: its JSON form is about 1.4 times as long. */
function quotedCsv(rawBytes: number): string {
  const lines = ['"region","amount"'];
  for (let i = 0; lines.join("\n").length < rawBytes - 20; i++) lines.push(`"r${i % 7}","${i % 100}"`);
  return lines.join("\n");
}

/** Inline CSV text whose item is exactly `bytes` long as JSON, with escapes (quotes, line breaks, a tab) in it. */
function itemOfJsonBytes(bytes: number): string {
  const head = '"region","amount"\n"a\tb","1"\n"pad';
  const tail = '","2"';
  const padding = bytes - jsonBytes({ inline: head + tail });
  return `${head}${"x".repeat(padding)}${tail}`;
}

function errorsOf(body: unknown): { field: string; message: string }[] {
  const result = validateSubmission(body, createRegistry());
  return result.ok ? [] : result.errors;
}

describe("submission limits: an inline item counts as a work message carries it (JSON-escaped)", () => {
  it("refuses a 32 KiB quoted CSV whose JSON form is over the limit, saying its size as JSON and the limit", () => {
    const inline = quotedCsv(32 * 1024);
    expect(Buffer.byteLength(inline)).toBeLessThanOrEqual(32 * 1024);
    const size = jsonBytes({ inline });
    expect(size).toBeGreaterThan(ITEM_LIMIT);
    expect(errorsOf({ kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }, { inline }] })).toEqual([
      {
        field: "items.1.inline",
        message: `the item is ${size} bytes as JSON, as a work message carries it (quotes, backslashes and line breaks take 2 bytes, other control characters 6); at most ${ITEM_LIMIT} are allowed so that its work message fits a 64 KiB queue message; put larger inputs in a blob and name it with { "blob": … }`,
      },
    ]);
  });

  it(`accepts an item of exactly ${ITEM_LIMIT} bytes as JSON and refuses one byte more, in a request and in a manifest line`, () => {
    const atLimit = itemOfJsonBytes(ITEM_LIMIT);
    const over = itemOfJsonBytes(ITEM_LIMIT + 1);
    expect([jsonBytes({ inline: atLimit }), jsonBytes({ inline: over })]).toEqual([ITEM_LIMIT, ITEM_LIMIT + 1]);
    expect(errorsOf({ kind: "group-by", params, items: [{ inline: atLimit }] })).toEqual([]);
    expect(errorsOf({ kind: "group-by", params, items: [{ inline: over }] })).toEqual([
      {
        field: "items.0.inline",
        message: expect.stringMatching(`^the item is ${ITEM_LIMIT + 1} bytes as JSON`) as unknown,
      },
    ]);
    expect(parseManifestLine(JSON.stringify({ inline: atLimit }))).toEqual({ ok: true, item: { inline: atLimit } });
    expect(parseManifestLine(JSON.stringify({ inline: over }))).toEqual({
      ok: false,
      reason: expect.stringMatching(`^inline: the item is ${ITEM_LIMIT + 1} bytes as JSON`) as unknown,
    });
  });

  it(`refuses params over ${PARAMS_LIMIT} bytes as JSON (every work message carries them), naming the limit`, () => {
    const registry = new TaskRegistry().register({
      name: "echo",
      params: z.strictObject({ note: z.string() }),
      process: (input) => input.text,
    });
    const note = (bytes: number): string => "n".repeat(bytes - jsonBytes({ note: "" }));
    const submit = (bytes: number) =>
      validateSubmission({ kind: "echo", params: { note: note(bytes) }, items: [{ inline: "x" }] }, registry);
    expect(submit(PARAMS_LIMIT).ok).toBe(true);
    expect(submit(PARAMS_LIMIT + 1)).toEqual({
      ok: false,
      errors: [
        {
          field: "params",
          message: `params are ${PARAMS_LIMIT + 1} bytes as JSON; at most ${PARAMS_LIMIT} are allowed (every work message carries them, beside items of up to ${ITEM_LIMIT} bytes)`,
        },
      ],
    });
  });

  it("the largest work message a valid submission can make fits a 64 KiB queue message in base64", () => {
    const message: UnitWorkMessage = {
      v: 2,
      jobId: "00000000-0000-4000-8000-000000000000", // a job id is a UUID
      first: MAX_ITEMS_PER_JOB,
      kind: "k".repeat(64),
      params: { note: "n".repeat(PARAMS_LIMIT - jsonBytes({ note: "" })) },
      inputs: [{ inline: itemOfJsonBytes(ITEM_LIMIT) }],
    };
    expect(Buffer.from(JSON.stringify(message)).toString("base64").length).toBeLessThanOrEqual(QUEUE_MESSAGE_LIMIT);
  });
});
