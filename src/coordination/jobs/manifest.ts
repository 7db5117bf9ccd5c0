import type { FieldError, JobHeader, WriterOptions } from "./submit.js";
import { JobWriter, MAX_ITEMS_PER_JOB } from "./submit.js";
import { describeIssues, submittedItemSchema, type ItemInput } from "../ports/messages.js";
import type { BlobFiles, InputFiles, OpenedBlob } from "../ports/ports.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * Manifests: a submission may name its items in an NDJSON blob in the input container instead of the request body
 * (`{"kind", "params", "manifest": "name.ndjson"}`), so a job of up to MAX_ITEMS_PER_JOB items needs no huge request.
 * Each non-blank line is one item, `{"inline": "…"}` or `{"blob": "name in the input container"}`, in order (item 0
 * is the first item line). The manifest is read once, at submission, straight into the job's chunks in the system
 * container; the leader never reads it.
 */

/** Largest manifest accepted, in bytes (a million items of up to ~130 bytes per line). */
export const MAX_MANIFEST_BYTES = 128 * 1024 * 1024;
/** Longest line accepted, in bytes: an inline item of MAX_INLINE_ITEM_BYTES, JSON-escaped, fits. */
export const MAX_MANIFEST_LINE_BYTES = 256 * 1024;
/** Bad lines reported before reading stops. */
const MAX_REPORTED_LINES = 20;

const MIB = 1024 * 1024;

/** One line of a manifest: its text, or why it is unusable. Line numbers count every line from 1, blank ones too. */
export type ManifestLine = { line: number; text: string } | { line: number; error: string };

/**
 * Splits a byte stream into lines (LF or CRLF), decoding each as UTF-8; a line longer than `maxLineBytes` is an error,
 * never held whole.
 */
export async function* manifestLines(
  content: AsyncIterable<Uint8Array>,
  maxLineBytes = MAX_MANIFEST_LINE_BYTES,
): AsyncGenerator<ManifestLine> {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  /** The line being read: its pieces so far, or only that it is too long. */
  const current = { parts: [] as Buffer[], length: 0, tooLong: false };
  let line = 0;
  const finish = (): ManifestLine => {
    line++;
    const { parts, length, tooLong } = current;
    Object.assign(current, { parts: [], length: 0, tooLong: false });
    if (tooLong) return { line, error: `longer than ${maxLineBytes} bytes` };
    let text: string;
    try {
      text = decoder.decode(Buffer.concat(parts, length));
    } catch {
      return { line, error: "not valid UTF-8" };
    }
    if (line === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
    return { line, text: text.endsWith("\r") ? text.slice(0, -1) : text };
  };
  const append = (piece: Buffer): void => {
    if (current.tooLong) return;
    if (current.length + piece.length > maxLineBytes) {
      Object.assign(current, { parts: [], length: 0, tooLong: true });
      return;
    }
    current.parts.push(piece);
    current.length += piece.length;
  };
  for await (const chunk of content) {
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let newline = buffer.indexOf(10, start); newline !== -1; newline = buffer.indexOf(10, start)) {
      append(buffer.subarray(start, newline));
      yield finish();
      start = newline + 1;
    }
    // Copied: the stream may reuse its buffer.
    if (start < buffer.length) append(Buffer.from(buffer.subarray(start)));
  }
  if (current.length > 0 || current.tooLong) yield finish();
}

/** Parses one manifest line into an item, or says what is wrong with it. */
export function parseManifestLine(text: string): { ok: true; item: ItemInput } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `not valid JSON (${error instanceof Error ? error.message : String(error)})` };
  }
  const keys = value !== null && typeof value === "object" && !Array.isArray(value) ? Object.keys(value) : [];
  if (keys.length !== 1 || (keys[0] !== "inline" && keys[0] !== "blob"))
    return { ok: false, reason: 'must be {"inline": "…"} or {"blob": "name in the input container"}' };
  const parsed = submittedItemSchema.safeParse(value);
  return parsed.success ? { ok: true, item: parsed.data } : { ok: false, reason: describeIssues(parsed.error) };
}

/** A manifest opened for a submission, its size checked: read it with {@link storeOpenedManifest}. */
export type OpenedManifest = OpenedBlob & { name: string };

/** Refusals of a manifest, as field errors of `manifest`. */
function refuse(messages: string[]): { ok: false; errors: FieldError[] } {
  return { ok: false, errors: messages.map((message) => ({ field: "manifest", message })) };
}

/**
 * Opens a submission's manifest in the input container (one request: its size, its version and the start of its
 * content), or says why it cannot be a manifest: it does not exist, or it is larger than {@link MAX_MANIFEST_BYTES}.
 */
export async function openManifest(
  inputs: InputFiles,
  manifest: string,
  options: Abortable = {},
): Promise<{ ok: true; opened: OpenedManifest } | { ok: false; errors: FieldError[] }> {
  const opened = await inputs.open(manifest, options);
  if (opened === undefined) return refuse([`blob "${manifest}" does not exist in the input container`]);
  if (opened.sizeBytes > MAX_MANIFEST_BYTES) {
    opened.close();
    return refuse([
      `blob "${manifest}" is ${opened.sizeBytes} bytes; a manifest may have at most ${MAX_MANIFEST_BYTES} bytes (${MAX_MANIFEST_BYTES / MIB} MiB)`,
    ]);
  }
  return { ok: true, opened: { ...opened, name: manifest } };
}

/**
 * Reads a validated submission's manifest from the input container, line by line, into a new job in the system
 * container. Every bad line is reported with its number (up to 20), and then nothing is stored: chunks already
 * written are removed, no spec or inbox marker is written.
 */
export async function storeManifestSubmission(
  ports: { system: BlobFiles; inputs: InputFiles },
  submission: JobHeader & { manifest: string },
  /** `chunkSize`: internal, no request sets it (@default `CHUNK_SIZE`; the simulator's small jobs, several chunks). */
  options: WriterOptions = {},
): Promise<{ ok: true; id: string; itemCount: number; stored: boolean } | { ok: false; errors: FieldError[] }> {
  const opened = await openManifest(ports.inputs, submission.manifest, options);
  if (!opened.ok) return opened;
  return storeOpenedManifest(ports.system, opened.opened, submission, options);
}

/**
 * Reads an opened manifest line by line into a new job (see {@link storeManifestSubmission}), and closes it. With
 * `options.once` (an idempotency claim's job), a storage failure leaves what was written for a retry to complete.
 */
export async function storeOpenedManifest(
  system: BlobFiles,
  opened: OpenedManifest,
  submission: JobHeader,
  options: WriterOptions = {},
): Promise<{ ok: true; id: string; itemCount: number; stored: boolean } | { ok: false; errors: FieldError[] }> {
  const writer = new JobWriter(system, options);
  const problems: string[] = [];
  let items = 0;
  try {
    for await (const entry of manifestLines(opened.content)) {
      if ("text" in entry && entry.text.trim() === "") continue;
      const parsed = "text" in entry ? parseManifestLine(entry.text) : ({ ok: false, reason: entry.error } as const);
      if (!parsed.ok) {
        problems.push(`line ${entry.line}: ${parsed.reason}`);
      } else if (++items > MAX_ITEMS_PER_JOB) {
        problems.push(
          `line ${entry.line}: more than ${MAX_ITEMS_PER_JOB} items; a job may have at most ${MAX_ITEMS_PER_JOB}`,
        );
        break;
      } else if (problems.length === 0) {
        await writer.add(parsed.item);
      }
      if (problems.length >= MAX_REPORTED_LINES) {
        problems.push(`stopped reading after ${MAX_REPORTED_LINES} bad lines`);
        break;
      }
    }
    if (problems.length === 0 && items === 0) problems.push("the manifest has no items; a job needs at least one item");
    if (problems.length > 0) {
      await writer.abandon();
      return refuse(problems);
    }
    return { ok: true, ...(await writer.commit(submission)) };
  } catch (error) {
    await writer.abandonAfterFailure();
    throw error;
  } finally {
    opened.close();
  }
}
