import type { CoordinationDeps } from "../deps.js";
import type { OpenedBlob } from "../ports/ports.js";
import { ItemError, type TaskInput } from "../kinds/taskKinds.js";
import { ConfigurationError } from "../../library/errors.js";
import type { Abortable } from "../../library/util/delay.js";

/* What a worker hands a task kind for an item: its input, inline or read from the user's input container. */

/**
 * An item's input for the kind: its bytes and its text, each made from the other on first use (an inline item is text,
 * a blob's content bytes). A class, its getters on the prototype: an object literal with getters costs about 20 times
 * as much to make (runtime accessor definitions), and one is made per item (issue 35).
 */
export function inputOf(bytes: Uint8Array | undefined, text: string | undefined, blob?: string): TaskInput {
  return new ItemInput(bytes, text, blob);
}

class ItemInput implements TaskInput {
  #bytes: Uint8Array | undefined;
  #text: string | undefined;

  constructor(
    bytes: Uint8Array | undefined,
    text: string | undefined,
    readonly blob: string | undefined,
  ) {
    this.#bytes = bytes;
    this.#text = text;
  }

  get bytes(): Uint8Array {
    this.#bytes ??= Buffer.from(this.#text ?? "", "utf8");
    return this.#bytes;
  }

  get text(): string {
    if (this.#text === undefined) {
      const bytes = this.#bytes;
      this.#text =
        bytes === undefined ? "" : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
    }
    return this.#text;
  }
}

/**
 * An input blob's text. The item's fault, not a transient one — it fails alone ({@link ItemError}) — when the blob does
 * not exist, when the storage adapter refuses its name (a ConfigurationError: it would address a blob outside the
 * input container), or when it is larger than `maxInputBlobBytes`: its size is known when the blob is opened, before
 * any of its content is downloaded, and the content is counted as it arrives too.
 */
export async function readInputBlob(
  deps: Pick<CoordinationDeps, "inputs" | "maxInputBlobBytes">,
  name: string,
  options: Abortable,
): Promise<TaskInput> {
  let opened: OpenedBlob | undefined;
  try {
    opened = await deps.inputs.open(name, options);
  } catch (error) {
    if (error instanceof ConfigurationError) throw new ItemError(error.message);
    throw error;
  }
  if (opened === undefined) throw new ItemError(`input blob "${name}" does not exist`);
  const max = deps.maxInputBlobBytes;
  const tooLarge = (size: string): ItemError =>
    new ItemError(
      `input blob "${name}" is ${size}; MAX_INPUT_BLOB_BYTES allows at most ${bytesText(max)} per input blob: split it into several items`,
    );
  const pieces: Uint8Array[] = [];
  let length = 0;
  try {
    if (opened.sizeBytes > max) throw tooLarge(bytesText(opened.sizeBytes));
    for await (const piece of opened.content) {
      length += piece.byteLength;
      if (length > max) throw tooLarge(`more than ${max} bytes`); // storage did not tell its size
      pieces.push(piece);
    }
  } finally {
    opened.close();
  }
  return inputOf(Buffer.concat(pieces, length), undefined, name);
}

/** A size in bytes, for people: `25165824 bytes (24 MiB)`, `1536 bytes (1.5 KiB)`, `100 bytes`. */
function bytesText(bytes: number): string {
  const [unit, size] = bytes >= 1024 * 1024 ? ["MiB", 1024 * 1024] : bytes >= 1024 ? ["KiB", 1024] : [undefined, 1];
  return unit === undefined ? `${bytes} bytes` : `${bytes} bytes (${Number((bytes / size).toFixed(2))} ${unit})`;
}
