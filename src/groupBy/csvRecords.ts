import { parse as parseCsv } from "csv-parse/sync";
import { ItemError } from "../coordination/kinds/taskKinds.js";

/**
 * CSV with a header row, read one record at a time for the group-by kind: each record's number (the header is record
 * 1) and the values of two named fields, trimmed (`undefined` when the header has no such field). Records are not kept.
 * Blank lines are skipped. A record with more or fewer fields than the header fails the input with an `ItemError`, as
 * does any text that is not RFC 4180 CSV.
 */
export type CsvVisit = (record: number, key: string | undefined, value: string | undefined) => void;

/**
 * Reads `input` as CSV with a header row, calling `visit` with each record's `keyField` and `valueField`. Text with no
 * quote, no carriage return and well-formed UTF-16 — what CSV writers produce for plain keys and numbers — is split on
 * line feeds and commas ({@link forEachPlainCsvRecord}), about ten times as fast as setting up `csv-parse` for each
 * small item; any other text goes through `csv-parse` ({@link forEachCsvRecordByLibrary}). Both give the same records
 * and the same errors: a property test holds them to it. An `ItemError` from `visit` ends the read.
 */
export function forEachCsvRecord(input: string, keyField: string, valueField: string, visit: CsvVisit): void {
  if (isPlainCsv(input)) forEachPlainCsvRecord(input, keyField, valueField, visit);
  else forEachCsvRecordByLibrary(input, keyField, valueField, visit);
}

/**
 * Whether `input` can be read by splitting on line feeds and commas: it has no double quote (so no field is quoted and
 * a comma or line feed is always a separator), no carriage return (so every record ends with a line feed, as
 * `csv-parse` finds when its first record delimiter is one) and no lone surrogate (which `csv-parse`, reading UTF-8
 * bytes, would turn into U+FFFD).
 */
export function isPlainCsv(input: string): boolean {
  return !input.includes('"') && !input.includes("\r") && input.isWellFormed();
}

/**
 * The fast path of {@link forEachCsvRecord} for {@link isPlainCsv} text: what `csv-parse` does with `columns: true`,
 * `skip_empty_lines: true` and `trim: true` on such text (its trim is `String.prototype.trim`'s whitespace). Where the
 * header names a field twice, the later column counts, as in `csv-parse`'s records.
 */
export function forEachPlainCsvRecord(input: string, keyField: string, valueField: string, visit: CsvVisit): void {
  let header: string[] | undefined;
  let keyIndex = -1;
  let valueIndex = -1;
  let record = 1;
  let line = 0;
  for (let start = 0; start < input.length;) {
    const newline = input.indexOf("\n", start);
    const end = newline === -1 ? input.length : newline;
    const text = input.slice(start, end);
    start = end + 1;
    line++;
    if (text.trim() === "") continue;
    const fields = text.split(",");
    if (header === undefined) {
      header = fields.map((field) => field.trim());
      keyIndex = header.lastIndexOf(keyField);
      valueIndex = header.lastIndexOf(valueField);
      continue;
    }
    if (fields.length !== header.length)
      throw new ItemError(
        `${NOT_CSV}: Invalid Record Length: columns length is ${header.length}, got ${fields.length} on line ${line}`,
      );
    record++;
    visit(record, fields[keyIndex]?.trim(), fields[valueIndex]?.trim());
  }
}

/** The library path of {@link forEachCsvRecord}: any CSV text, through `csv-parse`. */
export function forEachCsvRecordByLibrary(input: string, keyField: string, valueField: string, visit: CsvVisit): void {
  let record = 1;
  let fromVisit: { error: unknown } | undefined;
  try {
    parseCsv<Record<string, string>>(input, {
      columns: true,
      skip_empty_lines: true,
      trim: true,
      // Each record is visited as it is parsed and not kept (null skips it from the result).
      on_record: (fields: Record<string, string>) => {
        try {
          visit(++record, ownField(fields, keyField), ownField(fields, valueField));
        } catch (error) {
          fromVisit = { error };
          throw error;
        }
        return null;
      },
    });
  } catch (error) {
    // What `visit` threw leaves as it was thrown, as from the plain path; only the parser's errors mean bad CSV.
    if (fromVisit !== undefined) throw fromVisit.error;
    throw new ItemError(`${NOT_CSV}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const NOT_CSV = "input is not valid CSV with a header row";

/** A record's field, if its header names it (not a property every object has, such as `toString`). */
function ownField(fields: Record<string, string>, name: string): string | undefined {
  return Object.hasOwn(fields, name) ? fields[name] : undefined;
}
