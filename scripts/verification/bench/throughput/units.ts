import type { Settings } from "../../../../src/app/settings";
import type { ItemInput } from "../../../../src/coordination/ports/messages";
import { unitItemsFor } from "../../../../src/coordination/jobs/unitSize";

/**
 * How the batched baseline packs items into unit messages: the rule of the leader's dispatch
 * (src/coordination/dispatch/dispatch.ts) — contiguous items, greedily, at most `maxItems` per unit and at most
 * `maxBytes` of JSON with the envelope (an item larger than that goes alone) — so it sends the same number of messages
 * of the same size as the project.
 */

/**
 * The most items the app's leader puts in a unit of this job at these settings (the rule of
 * src/coordination/jobs/unitSize.ts, as the job's registration applies it), so the batched loop sends the same units.
 */
export function appUnitItems(
  settings: Pick<
    Settings,
    "WORK_UNIT_MAX_ITEMS" | "WORK_UNIT_MAX_BLOB_ITEMS" | "WORK_UNIT_SPREAD" | "DISPATCH_BATCH_SIZE"
  >,
  items: readonly ItemInput[],
): number {
  return unitItemsFor(
    {
      workUnitMaxItems: settings.WORK_UNIT_MAX_ITEMS,
      workUnitMaxBlobItems: settings.WORK_UNIT_MAX_BLOB_ITEMS,
      workUnitSpread: settings.WORK_UNIT_SPREAD,
      // As src/app/operations.ts sets it.
      maxInFlight: settings.DISPATCH_BATCH_SIZE * 2,
    },
    { itemCount: items.length, blobItems: items.filter((item) => "blob" in item).length },
  );
}

/** A unit: the inputs of items `first`, `first + 1`, … */
export interface Unit {
  first: number;
  inputs: ItemInput[];
}

/** Packs `inputs` into units; `envelopeBytes` is what a unit's JSON costs besides its inputs. */
export function packUnits(
  inputs: readonly ItemInput[],
  limits: { maxItems: number; maxBytes: number },
  envelopeBytes: number,
): Unit[] {
  const units: Unit[] = [];
  let unit: (Unit & { bytes: number }) | undefined;
  const close = (): void => {
    if (unit !== undefined) units.push({ first: unit.first, inputs: unit.inputs });
    unit = undefined;
  };
  inputs.forEach((input, item) => {
    // Each input's JSON plus its separating comma, as dispatch counts it.
    const bytes = Buffer.byteLength(JSON.stringify(input)) + 1;
    if (unit !== undefined && envelopeBytes + unit.bytes + bytes > limits.maxBytes) close();
    unit ??= { first: item, inputs: [], bytes: 0 };
    unit.inputs.push(input);
    unit.bytes += bytes;
    if (unit.inputs.length >= limits.maxItems) close();
  });
  close();
  return units;
}
