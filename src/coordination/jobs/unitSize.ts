import type { CoordinationDeps } from "../deps.js";
import type { JobSpec } from "../state/jobState.js";

/**
 * How many items a job's work units may carry, chosen once when the job registers and stored in its state
 * (`unitMaxItems`, beside `unitMaxBytes`): dispatch packs items greedily from the cursor within both, so a unit's
 * boundaries never change for the job's life (a unit re-sent after a crash is the same unit; folding relies on it).
 *
 * The rule — the smallest of:
 * 1. `WORK_UNIT_MAX_ITEMS` (default 1,000), the most a unit may carry. Within it a unit of inline items carries as many
 *    as fit `WORK_UNIT_MAX_BYTES` (45 KiB of JSON, so the base64 message fits 64 KiB): about 410 items of 91 bytes.
 *    What a unit costs in storage — its work message sent, received and deleted, its result sent, received and deleted
 *    — is the same whatever it carries, so the fuller the unit, the fewer operations per item (0.13 an item at 32 items
 *    a unit; about 0.01 at 410).
 * 2. `WORK_UNIT_MAX_BLOB_ITEMS` (default 32, the units of before) when any item names a blob, or when the spec does
 *    not say (written before specs counted them): each such item is a storage read the worker waits for and a text
 *    of up to `MAX_INPUT_BLOB_BYTES` it holds, so a unit of them is slow and large, and the read (1 operation an item)
 *    dwarfs what a larger unit would save.
 * 3. The job's in-flight window cut into `WORK_UNIT_SPREAD` units (default 16): ⌈min(items, 2 × DISPATCH_BATCH_SIZE) ÷
 *    WORK_UNIT_SPREAD⌉. A job keeps at most 2 × DISPATCH_BATCH_SIZE items in flight, so that many units can run at once
 *    on as many workers: a 200-item job goes out as 16 units of 13 (the last of 5), not one unit of 200 on one worker,
 *    and a job with a small DISPATCH_BATCH_SIZE (items that are costly) still reaches 16 workers. 16 is host.json's
 *    queue `batchSize`: what one instance's queue trigger takes at a poll (a 17th unit waited for a later poll, often
 *    another instance's, in a measured run), and what Flex's target-based scaling counts per instance.
 */
export function unitItemsFor(
  deps: Pick<CoordinationDeps, "workUnitMaxItems" | "workUnitMaxBlobItems" | "workUnitSpread" | "maxInFlight">,
  spec: Pick<JobSpec, "itemCount" | "blobItems">,
): number {
  const mayHoldBlobs = spec.blobItems === undefined || spec.blobItems > 0;
  const cap = mayHoldBlobs ? Math.min(deps.workUnitMaxItems, deps.workUnitMaxBlobItems) : deps.workUnitMaxItems;
  const window = Math.min(spec.itemCount, Math.max(1, deps.maxInFlight));
  // Rounded up, so the window makes WORK_UNIT_SPREAD units at most: 200 items in 16 units of 13, not 17 of 12.
  return Math.max(1, Math.min(cap, Math.ceil(window / Math.max(1, deps.workUnitSpread))));
}
