import { readFileSync, statSync } from "node:fs";
import { MAX_BODY_BYTES } from "../host/http.js";
import { ConfigurationError } from "../library/errors.js";

/**
 * Reads a job file (`--job`, `--file`): JSON as `POST /api/jobs` takes it, `{"kind":…,"params":…,"items":[…]}`, at
 * most as large as the HTTP route accepts.
 *
 * @throws ConfigurationError naming the file and what is wrong: missing, too large, or not JSON (printed alone, not
 *   buried under the usage: the flags were right, the file is not).
 */
export function readJobFile(path: string, flag: string): unknown {
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    throw new ConfigurationError(`${flag} ${path}: no such file.`);
  }
  if (size > MAX_BODY_BYTES)
    throw new ConfigurationError(
      `${flag} ${path} is ${size} bytes; a job file may have at most ${MAX_BODY_BYTES} (as the HTTP route). Name large inputs as blobs ({"blob": …}) or in a manifest.`,
    );
  try {
    return JSON.parse(readFileSync(path, "utf8")) as unknown;
  } catch (error) {
    throw new ConfigurationError(
      `${flag} ${path} is not JSON (${(error as Error).message}); it must look like {"kind":"…","params":{…},"items":[{"inline":"…"}]}.`,
    );
  }
}
