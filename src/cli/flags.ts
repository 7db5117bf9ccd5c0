import { parseArgs, type ParseArgsOptionsConfig } from "node:util";

/**
 * The command-line helpers every script shares: Node's `util.parseArgs` (strict, no positionals) and the checks its
 * flags need, each failing with a {@link UsageError} that names the flag and what is allowed.
 */

/** A bad command line: the message names the flag and what is allowed; the caller prints it with the usage. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * Parses `argv` (without node and script) against `options`: unknown flags, positionals and missing values are
 * refused.
 *
 * @throws UsageError with `parseArgs`'s own message (it names the flag) and where to find the flags.
 */
export function parseFlags<const O extends ParseArgsOptionsConfig>(argv: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(`${(error as Error).message}. Run with --help for the flags.`);
  }
}

/** The range a number flag allows. */
export interface NumberRange {
  min: number;
  max: number;
  /** Whole numbers only. @default true */
  integer?: boolean;
}

/**
 * The number `raw` gives `flag`, or undefined when the flag was not given.
 *
 * @throws UsageError when `raw` is not a (whole) number from `min` to `max`.
 */
export function numberFlag(
  raw: string | undefined,
  flag: string,
  { min, max, integer = true }: NumberRange,
): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  const ok =
    raw.trim() !== "" &&
    Number.isFinite(value) &&
    (!integer || Number.isInteger(value)) &&
    value >= min &&
    value <= max;
  if (!ok)
    throw new UsageError(
      `${flag} must be ${integer ? "a whole number" : "a number"} from ${min} to ${max}, got "${raw}".`,
    );
  return value;
}

/**
 * A file path flag: undefined when not given.
 *
 * @throws UsageError for an empty path.
 */
export function pathFlag(raw: string | undefined, flag: string): string | undefined {
  if (raw !== undefined && raw.trim() === "") throw new UsageError(`${flag} must be a file path, got an empty string.`);
  return raw;
}

/**
 * A comma-separated list flag whose names must come from `allowed`; undefined when not given.
 *
 * @throws UsageError naming the unknown names and the allowed ones.
 */
export function listFlag<T extends string>(
  raw: string | undefined,
  flag: string,
  allowed: readonly T[],
): T[] | undefined {
  if (raw === undefined) return undefined;
  const names = raw
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "");
  const unknown = names.filter((name) => !allowed.includes(name as T));
  if (unknown.length > 0)
    throw new UsageError(`${flag}: unknown ${unknown.join(", ")}; allowed: ${allowed.join(", ")}.`);
  return names as T[];
}
