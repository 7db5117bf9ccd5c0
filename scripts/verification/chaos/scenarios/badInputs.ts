import { expectedAggregate, type ItemSpec } from "../jobs";
import type { Aggregate } from "../../../../dev/src/local/demoData";

/**
 * The bad input of the bad-input scenario: raw queue messages (invalid encoding, invalid JSON, wrong shapes, unknown
 * task kinds, oversized payloads, prototype keys, numbers out of range), job submissions the API must refuse, and a
 * job mixing good items (some with keys like `__proto__`) and bad ones. Every shaped message names its own fake job
 * or item number, so whoever reports it can be matched to it.
 */

/** A raw message to put on a queue, and the marker a report of it must mention (besides its message id). */
export interface BadMessage {
  label: string;
  queue: "work" | "results";
  /** The body exactly as stored (base64 unless the point is that it is not). */
  body: string;
  /** Text a leader's rejection reason contains when the report cannot carry our message id (a result of our work). */
  marker?: string;
}

const b64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");
const PARAMS = { format: "csv", keyField: "region", valueField: "amount" } as const;
const CSV = "region,amount\nnorth,1.00\n";

/** Bad messages for the work and results queues; `jobId`/`itemCount` are the good job's (for out-of-range items). */
export function badMessages(jobId: string, itemCount: number): BadMessage[] {
  let fake = 0;
  const fakeJob = (): string => `bad-${(++fake).toString().padStart(4, "0")}-${Date.now().toString(36)}`;
  /**
   * A work message for a fake job, changed by `fields`/`edit`; its marker is the fake job id (a result of it is
   * rejected naming it).
   */
  const work = (
    label: string,
    fields: Record<string, unknown>,
    edit: (json: string) => string = (json) => json,
  ): BadMessage => {
    const id = typeof fields.jobId === "string" ? fields.jobId : fakeJob();
    const json = JSON.stringify({
      v: 1,
      jobId: id,
      item: 0,
      kind: "group-by",
      params: PARAMS,
      input: { inline: CSV },
      ...fields,
      ...(fields.jobId === undefined ? { jobId: id } : {}),
    });
    return { label, queue: "work", body: b64(edit(json)), marker: `"${id}"` };
  };
  const outOfRangeItem = itemCount + 700_001;
  return [
    { label: "work: not base64", queue: "work", body: "this is not base64 at all!" },
    {
      label: "work: base64 of invalid UTF-8",
      queue: "work",
      body: Buffer.from([0xff, 0xfe, 0x7b, 0xc3]).toString("base64"),
    },
    { label: "work: invalid JSON", queue: "work", body: b64('{"v":1,"jobId":') },
    { label: "work: JSON object of the wrong shape", queue: "work", body: b64('{"hello":"world"}') },
    { label: "work: JSON array", queue: "work", body: b64("[1,2,3]") },
    { label: "work: JSON null", queue: "work", body: b64("null") },
    { label: "work: JSON number", queue: "work", body: b64("42") },
    work("work: unknown task kind", { kind: "no-such-kind" }),
    work("work: params invalid for the kind", { params: { format: "xml", keyField: "a", valueField: "b" } }),
    work("work: oversized inline input (43 KiB)", {
      input: { inline: `region,amount\n${"north,1.00\n".repeat(4000)}` },
    }),
    work("work: __proto__ key", {}, (json) => json.replace(/^\{/, '{"__proto__":{"polluted":true},')),
    work("work: constructor.prototype key", {}, (json) =>
      json.replace(/^\{/, '{"constructor":{"prototype":{"polluted":true}},'),
    ),
    work("work: __proto__ inside params", {}, (json) => json.replace('"params":{', '"params":{"__proto__":{"x":1},')),
    work("work: item -1", { item: -1 }),
    work("work: item above the maximum", { item: 10_000_001 }),
    work("work: item 1e400 (Infinity)", {}, (json) => json.replace('"item":0', '"item":1e400')),
    work("work: fractional item", { item: 1.5 }),
    work("work: item as a string", { item: "3" }),
    work("work: version 2", { v: 2 }),
    work("work: valid item of a job that does not exist", {}),
    {
      ...work("work: item beyond the real job's item count", { jobId, item: outOfRangeItem }),
      marker: `item ${outOfRangeItem}`,
    },
    { label: "results: not base64", queue: "results", body: "%%% not base64 %%%" },
    { label: "results: invalid JSON", queue: "results", body: b64("{oops") },
    { label: "results: wrong shape", queue: "results", body: b64(JSON.stringify({ v: 1, jobId, item: 0, ok: "yes" })) },
    {
      label: "results: job that does not exist",
      queue: "results",
      body: b64(JSON.stringify({ v: 1, jobId: fakeJob(), item: 0, ok: true, partial: [] })),
    },
    {
      label: "results: item beyond the real job's item count",
      queue: "results",
      body: b64(JSON.stringify({ v: 1, jobId, item: itemCount + 900_001, ok: true, partial: [] })),
    },
    {
      label: "results: negative item",
      queue: "results",
      body: b64(JSON.stringify({ v: 1, jobId, item: -1, ok: true, partial: [] })),
    },
    {
      label: "results: __proto__ key",
      queue: "results",
      body: b64(`{"__proto__":{"ok":true},${JSON.stringify({ v: 1, jobId, item: 0, ok: true, partial: [] }).slice(1)}`),
    },
  ];
}

/** Job submissions the app must refuse with field errors (and store nothing for). */
export function badSubmissions(): { label: string; body: unknown }[] {
  const item = { inline: CSV };
  return [
    { label: "null body", body: null },
    { label: "array body", body: [] },
    { label: "string body", body: "group-by please" },
    { label: "no items", body: { kind: "group-by", params: PARAMS } },
    { label: "empty items", body: { kind: "group-by", params: PARAMS, items: [] } },
    { label: "unknown kind", body: { kind: "no-such-kind", params: {}, items: [item] } },
    {
      label: "params of the wrong shape",
      body: { kind: "group-by", params: { format: "xml", keyField: "", valueField: 7 }, items: [item] },
    },
    { label: "item of the wrong type", body: { kind: "group-by", params: PARAMS, items: [{ inline: 1 }] } },
    {
      label: "oversized inline item",
      body: { kind: "group-by", params: PARAMS, items: [{ inline: "x".repeat(41 * 1024) }] },
    },
    { label: "blob name ending in /", body: { kind: "group-by", params: PARAMS, items: [{ blob: "inputs/" }] } },
    {
      label: "blob name with a .. segment (another container)",
      body: { kind: "group-by", params: PARAMS, items: [{ blob: "../coordinator-state/index.json" }] },
    },
    {
      label: "inline item within 40 KiB of text but over it as JSON (escaped quotes)",
      body: { kind: "group-by", params: PARAMS, items: [{ inline: `region,amount\n${'"r","1"\n'.repeat(4000)}` }] },
    },
    {
      label: "__proto__ key",
      body: JSON.parse(
        `{"__proto__":{"admin":true},"kind":"group-by","params":${JSON.stringify(PARAMS)},"items":[${JSON.stringify(item)}]}`,
      ) as unknown,
    },
    {
      label: "constructor key",
      body: { constructor: { prototype: { admin: true } }, kind: "group-by", params: PARAMS, items: [item] },
    },
    { label: "extra field", body: { kind: "group-by", params: PARAMS, items: [item], priority: "high" } },
    {
      label: "both items and a manifest",
      body: { kind: "group-by", params: PARAMS, items: [item], manifest: "m.ndjson" },
    },
    {
      label: "a manifest that does not exist",
      body: { kind: "group-by", params: PARAMS, manifest: "no-such-manifest.ndjson" },
    },
    { label: "a manifest name ending in /", body: { kind: "group-by", params: PARAMS, manifest: "manifests/" } },
  ];
}

/** A job of good items (some with keys such as `__proto__`) and bad items that must end in its failed list. */
export function mixedJob(): { items: ItemSpec[]; badItems: number[]; expected: Aggregate } {
  const good: [string, number][][] = [
    [
      ["__proto__", 150],
      ["constructor", 225],
      ["north", 400],
    ],
    [
      ["toString", 300],
      ["hasOwnProperty", 1],
      ["__proto__", 50],
    ],
    [
      ["south", 1999],
      ["north", 1],
    ],
    [
      ["valueOf", 12345],
      ["prototype", 10],
    ],
  ];
  const bad: ItemSpec[] = [
    { inline: '"unterminated,quote\nnorth,1\n' },
    { inline: "region,amount\nnorth,abc\n" },
    { inline: "region,amount\nnorth,10000000000000\n" },
    { inline: "region,amount\nnorth,1e309\n" },
    { inline: "amount\n5\n" },
    { blob: "chaos/no-such-input.csv" },
  ];
  const items: ItemSpec[] = [];
  const badItems: number[] = [];
  for (let index = 0; index < Math.max(good.length, bad.length); index++) {
    const rows = good[index];
    if (rows !== undefined)
      items.push({
        inline: `region,amount\n${rows.map(([key, cents]) => `${key},${(cents / 100).toFixed(2)}`).join("\n")}\n`,
      });
    const item = bad[index];
    if (item !== undefined) {
      badItems.push(items.length);
      items.push(item);
    }
  }
  return { items, badItems, expected: expectedAggregate(good.flat()) };
}
