import { createDemoJob, type Aggregate } from "../../../../dev/src/local/demoData";

/**
 * The benchmark's jobs: (a) `small` — many small inline items (about 100 bytes of CSV each); (b) `blob` — items that
 * name a CSV blob each; (c) `short` — a short job of the same small items (200 by default), where what counts is
 * how soon it completes, not the rate. The local runner's demo data (../local/demoData.ts) in a fixed shape: a fixed
 * seed, the expected aggregate added up in whole cents independently of the app, so every implementation's answer is
 * checked exactly.
 */

export type ScenarioName = "small" | "blob" | "short";
export const SCENARIOS: readonly ScenarioName[] = ["small", "blob", "short"];

/** One scenario's items and answer. */
export interface ScenarioJob {
  name: ScenarioName;
  kind: "group-by";
  params: { format: "csv"; keyField: string; valueField: string };
  items: ({ inline: string } | { blob: string })[];
  /** Blobs to upload to the input container before anything runs (setup, never timed or counted). */
  blobs: { name: string; text: string }[];
  expected: Aggregate;
}

/** Rows per small item: with the header, about 100 bytes. */
const SMALL_ROWS = 6;
/** Rows per blob item. */
const BLOB_ROWS = 10;

/** Builds a scenario's job of `count` items; blob names start with `blobPrefix/`. */
export function scenarioJob(name: ScenarioName, count: number, blobPrefix: string, seed = 20_260_501): ScenarioJob {
  const demo = createDemoJob(
    count,
    blobPrefix,
    seed,
    name === "blob" ? { rows: BLOB_ROWS, blobs: "all" } : { rows: SMALL_ROWS, blobs: "none" },
  );
  return { name, ...demo.spec, blobs: demo.blobs, expected: demo.expected };
}

/** Mean bytes of an item's input text (inline text, or the blob's). */
export function meanItemBytes(job: ScenarioJob): number {
  const texts =
    job.blobs.length > 0
      ? job.blobs.map((blob) => blob.text)
      : job.items.map((item) => ("inline" in item ? item.inline : ""));
  return texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) / Math.max(1, texts.length);
}
