/**
 * The demo job: sales rows by region as CSV, generated from a fixed seed so every run (and every test) sees the same
 * data, and the expected aggregate computed here, independently of the app, to check the app's answer.
 */

/** Per-key statistics, as the group-by task reports them. */
export interface GroupStats {
  count: number;
  sum: number;
  min: number;
  max: number;
}

/** An aggregate: stats by key. */
export type Aggregate = Record<string, GroupStats>;

/** The demo job's items and the answer it should produce. */
export interface DemoJob {
  spec: {
    kind: "group-by";
    params: { format: "csv"; keyField: string; valueField: string };
    items: ({ inline: string } | { blob: string })[];
  };
  /** Input blobs to upload (to INPUT_CONTAINER) before submitting: the items that name a blob. */
  blobs: { name: string; text: string }[];
  expected: Aggregate;
}

const REGIONS = ["north", "south", "east", "west", "central"] as const;

/** A small deterministic PRNG (mulberry32): the same seed gives the same data on every machine. */
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

/** The shape of a demo job's items: rows per item, and which items are blobs. */
export interface DemoShape {
  /** Rows per item (besides the header). @default 5–15, at random */
  rows?: number;
  /** Which items name a blob: every tenth, every one, or none. @default "tenth" */
  blobs?: "tenth" | "all" | "none";
}

/**
 * Builds `itemCount` CSV items of 5–15 rows each (`region,amount`, header first; amounts with two decimals). Every
 * tenth item is a blob named `<blobPrefix>/item-<n>.csv`, so both input kinds are exercised (`shape` changes both).
 * The expected sums are added up in whole cents, so they are exact; the app's must match them exactly too.
 */
export function createDemoJob(
  itemCount: number,
  blobPrefix: string,
  seed = 20_240_501,
  shape: DemoShape = {},
): DemoJob {
  const next = random(seed);
  const blobItems = shape.blobs ?? "tenth";
  const cents = new Map<string, { count: number; sum: number; min: number; max: number }>();
  const items: DemoJob["spec"]["items"] = [];
  const blobs: DemoJob["blobs"] = [];
  for (let item = 0; item < itemCount; item++) {
    const rows = ["region,amount"];
    const rowCount = shape.rows ?? 5 + Math.floor(next() * 11);
    for (let row = 0; row < rowCount; row++) {
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
    if (blobItems === "all" || (blobItems === "tenth" && item % 10 === 9)) {
      const name = `${blobPrefix}/item-${item}.csv`;
      blobs.push({ name, text });
      items.push({ blob: name });
    } else items.push({ inline: text });
  }
  const expected: Aggregate = {};
  for (const [region, stats] of [...cents].sort(([a], [b]) => a.localeCompare(b))) {
    expected[region] = { count: stats.count, sum: stats.sum / 100, min: stats.min / 100, max: stats.max / 100 };
  }
  return {
    spec: { kind: "group-by", params: { format: "csv", keyField: "region", valueField: "amount" }, items },
    blobs,
    expected,
  };
}

/** Narrows the app's aggregate (typed `unknown` in its status) to stats by key, or undefined when it is not one. */
export function asAggregate(value: unknown): Aggregate | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const isStats = (stats: unknown): stats is GroupStats =>
    typeof stats === "object" &&
    stats !== null &&
    ["count", "sum", "min", "max"].every((field) => typeof (stats as Record<string, unknown>)[field] === "number");
  return Object.values(value).every(isStats) ? (value as Aggregate) : undefined;
}

/** True when `actual` has exactly the keys of `expected` with the same stats (sums within 1e-9 relative). */
export function aggregatesMatch(actual: Aggregate | undefined, expected: Aggregate): boolean {
  if (actual === undefined) return false;
  const keys = Object.keys(expected).sort();
  if (JSON.stringify(Object.keys(actual).sort()) !== JSON.stringify(keys)) return false;
  return keys.every((key) => {
    const a = actual[key];
    const e = expected[key];
    return (
      a !== undefined &&
      e !== undefined &&
      a.count === e.count &&
      a.min === e.min &&
      a.max === e.max &&
      Math.abs(a.sum - e.sum) <= 1e-9 * Math.max(1, Math.abs(e.sum))
    );
  });
}
