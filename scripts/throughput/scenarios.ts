import type { Aggregate } from "../local/demoData";

/**
 * The benchmark's jobs: (a) `small` — many small inline items (about 100 bytes of CSV each); (b) `blob` — items that
 * name a CSV blob each. Generated from a fixed seed, with the expected aggregate added up here in whole cents,
 * independently of the app, so every implementation's answer is checked exactly.
 */

export type ScenarioName = "small" | "blob";
export const SCENARIOS: readonly ScenarioName[] = ["small", "blob"];

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

const REGIONS = ["north", "south", "east", "west", "central"] as const;
/** Rows per small item: with the header, about 100 bytes. */
const SMALL_ROWS = 6;
/** Rows per blob item. */
const BLOB_ROWS = 10;

/** mulberry32: the same seed gives the same data on every machine. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Builds a scenario's job of `count` items; blob names start with `blobPrefix/`. */
export function scenarioJob(name: ScenarioName, count: number, blobPrefix: string, seed = 20_260_501): ScenarioJob {
  const next = random(seed);
  const cents = new Map<string, { count: number; sum: number; min: number; max: number }>();
  const items: ScenarioJob["items"] = [];
  const blobs: ScenarioJob["blobs"] = [];
  const rowsPerItem = name === "small" ? SMALL_ROWS : BLOB_ROWS;
  for (let item = 0; item < count; item++) {
    const rows = ["region,amount"];
    for (let row = 0; row < rowsPerItem; row++) {
      const region = REGIONS[Math.floor(next() * REGIONS.length)] ?? "north";
      const amount = 100 + Math.floor(next() * 50_000);
      rows.push(`${region},${(amount / 100).toFixed(2)}`);
      const stats = cents.get(region);
      if (stats === undefined) cents.set(region, { count: 1, sum: amount, min: amount, max: amount });
      else {
        stats.count += 1;
        stats.sum += amount;
        stats.min = Math.min(stats.min, amount);
        stats.max = Math.max(stats.max, amount);
      }
    }
    const text = `${rows.join("\n")}\n`;
    if (name === "blob") {
      const blob = `${blobPrefix}/item-${item}.csv`;
      blobs.push({ name: blob, text });
      items.push({ blob });
    } else items.push({ inline: text });
  }
  const expected: Aggregate = {};
  for (const [region, stats] of [...cents].sort(([a], [b]) => a.localeCompare(b))) {
    expected[region] = { count: stats.count, sum: stats.sum / 100, min: stats.min / 100, max: stats.max / 100 };
  }
  return { name, kind: "group-by", params: { format: "csv", keyField: "region", valueField: "amount" }, items, blobs, expected };
}

/** Mean bytes of an item's input text (inline text, or the blob's). */
export function meanItemBytes(job: ScenarioJob): number {
  const texts = job.blobs.length > 0 ? job.blobs.map((blob) => blob.text) : job.items.map((item) => ("inline" in item ? item.inline : ""));
  return texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) / Math.max(1, texts.length);
}
