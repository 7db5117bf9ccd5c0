import { Bitmap } from "../../src/coordination/state/bitmap";
import type { GroupByPartial } from "../../src/groupBy/groupBy";
import { keys, type JobState } from "../../src/coordination/state/jobState";
import { JobStore } from "../../src/coordination/state/jobStore";
import { jsonByteLength } from "../../src/coordination/state/jsonSize";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import type { StateStore, StoredState, WriteCondition } from "../../src/library/fencing/StateStore";
import type { Abortable } from "../../src/library/util/delay";

/**
 * Jobs of the documented maximum size (1,000,000 items, 200,000 groups with keys of about 40 characters: ~7.8 MiB of
 * JSON each) for the status page's bound (issue 21, item 2): its test and `npm run bench:status`. The jobs share their
 * bitmaps and aggregate, so 35 of them cost the memory of one.
 */

/** The largest job the limits allow, as a job state (its id, counts and status set per job). */
export function maxSizeJob(id: string, overrides: Partial<JobState> = {}): JobState {
  return { ...MAX_SIZE_BASE(), id, ...overrides };
}

let base: JobState | undefined;
function MAX_SIZE_BASE(): JobState {
  if (base !== undefined) return base;
  const items = 1_000_000;
  const done = Bitmap.empty(items);
  for (let item = 0; item < items; item += 2) done.add(item);
  const aggregate: GroupByPartial = Array.from({ length: 200_000 }, (_, g) => [
    `user-${String(g).padStart(8, "0")}`,
    3,
    "16500000",
    1.5,
    9.5,
  ]);
  base = {
    v: 1,
    id: "",
    kind: "group-by",
    params: { format: "csv", keyField: "customer", valueField: "amount" },
    itemCount: items,
    chunkSize: 1000,
    createdAtMs: Date.parse("2026-05-01T12:00:00Z"),
    registeredAtMs: Date.parse("2026-05-01T12:00:01Z"),
    status: "running",
    unitMaxItems: 32,
    unitMaxBytes: 46080,
    dispatched: items,
    doneBits: done.toBase64(),
    failedBits: Bitmap.empty(items).toBase64(),
    doneCount: items / 2,
    failedCount: 0,
    aggregate,
    failures: Array.from({ length: 200 }, (_, n) => ({
      item: 2 * n + 1,
      reason: `record ${n}: field "amount" is not a number ("n/a")`,
    })),
    lastEpoch: 1,
  };
  return base;
}

/**
 * A state store that keeps documents by reference (no copy: 35 documents of 7.8 MiB sharing their parts cost little)
 * and counts what readers read: the bytes of JSON a blob download would carry for each whole document, and the bytes
 * of each summary (a HEAD request carries only headers). Writes keep the summary beside the document, as the blob
 * adapter keeps it in the blob's metadata.
 */
export class CountingStateStore implements StateStore {
  private readonly docs = new Map<string, StoredState & { summary?: string }>();
  private version = 0;
  /** Bytes read: whole documents (as JSON) and summaries. */
  bytesRead = 0;
  /** Keys read whole. */
  readonly wholeReads: string[] = [];

  read(key: string): Promise<StoredState | undefined> {
    const doc = this.docs.get(key);
    if (doc === undefined) return Promise.resolve(undefined);
    this.bytesRead += jsonByteLength(doc.value);
    this.wholeReads.push(key);
    return Promise.resolve({ value: doc.value, etag: doc.etag, epoch: doc.epoch });
  }

  readSummary(
    key: string,
  ): Promise<{ summary: string | undefined; etag: string; epoch: number; bytes: number } | undefined> {
    const doc = this.docs.get(key);
    if (doc === undefined) return Promise.resolve(undefined);
    this.bytesRead += Buffer.byteLength(doc.summary ?? "");
    return Promise.resolve({
      summary: doc.summary,
      etag: doc.etag,
      epoch: doc.epoch,
      bytes: jsonByteLength(doc.value),
    });
  }

  delete(key: string): Promise<void> {
    this.docs.delete(key);
    return Promise.resolve();
  }

  write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options: Abortable & { summary?: string } = {},
  ): Promise<{ etag: string }> {
    const current = this.docs.get(key);
    const ok = "ifMatch" in condition ? current?.etag === condition.ifMatch : current === undefined;
    if (!ok) return Promise.reject(new Error(`${key} changed`));
    const etag = `"v${++this.version}"`;
    this.docs.set(key, { value, etag, epoch, ...(options.summary === undefined ? {} : { summary: options.summary }) });
    return Promise.resolve({ etag });
  }
}

/**
 * Writes `active` running and `recent` ended jobs of the maximum size through the leader's own write path (so each
 * gets what a leader stores with it), and the index that lists them. Returns their ids, active first.
 */
export async function writeMaxSizeJobs(
  store: StateStore,
  counts: { active: number; recent: number },
): Promise<{ active: string[]; recent: string[] }> {
  const fence = { epoch: 1, assertLeader: () => undefined };
  const jobs = new JobStore(new FencedStateStore(store, fence));
  const active = Array.from({ length: counts.active }, (_, n) => `active-${n}`);
  const recent = Array.from({ length: counts.recent }, (_, n) => `recent-${n}`);
  for (const id of active) await jobs.writeJob(maxSizeJob(id), undefined);
  for (const [n, id] of recent.entries())
    await jobs.writeJob(
      maxSizeJob(id, {
        status: n % 2 === 0 ? "completed" : "failed",
        ...(n % 2 === 0
          ? {}
          : { failureReason: "the aggregate would have 200,003 groups, more than MAX_AGGREGATE_GROUPS" }),
        completedAtMs: Date.parse("2026-05-01T13:00:00Z"),
      }),
      undefined,
    );
  await store.write(keys.index, { v: 1, active, recent }, 1, { ifNoneMatch: "*" });
  return { active, recent };
}
