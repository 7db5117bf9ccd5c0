import { EMPTY_RECORD, type LeaderRecord, type Revocation } from "../library/lease/LeaseStore.js";

/**
 * The lease blob's metadata: the leader record (written only under the lease) and, on the `<blob>.revocation`
 * sibling, step-down requests. What {@link BlobLeaseStore} writes and reads; a value that does not parse counts as
 * absent.
 */

// Metadata keys come back lower-cased from storage, so they are written lower-case.
const META = {
  holder: "holder",
  epoch: "epoch",
  sinceMs: "sincems",
  transitions: "transitions",
  takeoverDeadlineMs: "takeoverdeadlinems",
  brokenBy: "brokenby",
  revokedEpoch: "revokedepoch",
  honoured: "honoured",
  requestId: "requestid",
} as const;

/** The revocation blob's metadata keys. */
export const REVOCATION_META = {
  revokedEpoch: META.revokedEpoch,
  honoured: META.honoured,
  requestId: META.requestId,
} as const;

function parseCount(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : undefined;
}

/** The lease blob's metadata for `record` (every write replaces all of it). */
export function recordMetadata(record: LeaderRecord): Record<string, string> {
  const metadata: Record<string, string> = {
    [META.holder]: record.holder,
    [META.epoch]: String(record.epoch),
    [META.sinceMs]: String(record.sinceMs),
    [META.transitions]: String(record.transitions),
  };
  if (record.takeoverDeadlineMs !== undefined && record.takeoverDeadlineMs > 0)
    metadata[META.takeoverDeadlineMs] = String(record.takeoverDeadlineMs);
  if (record.brokenBy !== undefined) metadata[META.brokenBy] = record.brokenBy;
  return metadata;
}

/** The step-down request in the revocation blob's metadata, if any. */
export function parseRevocation(metadata: Record<string, string>): Revocation | undefined {
  const epoch = parseCount(metadata[META.revokedEpoch]);
  if (epoch === undefined) return undefined;
  const requestId = metadata[META.requestId];
  return { epoch, honoured: metadata[META.honoured] === "true", ...(requestId === undefined ? {} : { requestId }) };
}

/** The leader record in the lease blob's metadata ({@link EMPTY_RECORD}'s values where a field is absent). */
export function parseRecord(metadata: Record<string, string>): LeaderRecord {
  const record: LeaderRecord = {
    holder: metadata[META.holder] ?? EMPTY_RECORD.holder,
    epoch: parseCount(metadata[META.epoch]) ?? EMPTY_RECORD.epoch,
    sinceMs: parseCount(metadata[META.sinceMs]) ?? EMPTY_RECORD.sinceMs,
    transitions: parseCount(metadata[META.transitions]) ?? EMPTY_RECORD.transitions,
  };
  const takeoverDeadlineMs = parseCount(metadata[META.takeoverDeadlineMs]);
  if (takeoverDeadlineMs !== undefined && takeoverDeadlineMs > 0) record.takeoverDeadlineMs = takeoverDeadlineMs;
  const brokenBy = metadata[META.brokenBy];
  if (brokenBy !== undefined && brokenBy !== "") record.brokenBy = brokenBy;
  return record;
}
