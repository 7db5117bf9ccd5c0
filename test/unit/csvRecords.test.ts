import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  forEachCsvRecord,
  forEachCsvRecordByLibrary,
  forEachPlainCsvRecord,
  isPlainCsv,
  type CsvVisit,
} from "../../src/groupBy/csvRecords";
import { ItemError } from "../../src/coordination/kinds/taskKinds";

type Read = (input: string, keyField: string, valueField: string, visit: CsvVisit) => void;

/** What a reader gave: every visit, then the error that ended the read, if any. */
function outcome(read: Read, input: string, keyField: string, valueField: string) {
  const visits: [number, string | undefined, string | undefined][] = [];
  try {
    read(input, keyField, valueField, (record, key, value) => visits.push([record, key, value]));
    return { visits, error: undefined };
  } catch (error) {
    return { visits, error: error instanceof ItemError ? `ItemError: ${error.message}` : String(error) };
  }
}

/**
 * Field text from characters that matter to a CSV reader: separators, whitespace it trims (ASCII and Unicode), letters,
 * digits.
 */
const fieldChar = fc.constantFrom(
  ...Array.from("abkv12.-, \t\v\f"),
  ...["\u00a0", "\ufeff", "\u1680", "\u2028", "\u3000", "é", "💶"],
);
const field = fc.string({ unit: fieldChar, maxLength: 6 });
const lineOf = fc.array(field, { minLength: 0, maxLength: 4 }).map((fields) => fields.join(","));
const plainText = fc
  .tuple(fc.array(lineOf, { maxLength: 8 }), fc.boolean())
  .map(([lines, trailing]) => lines.join("\n") + (trailing ? "\n" : ""));
const fieldName = fc.constantFrom("k", "v", "a", "b", "", "toString", "k ", "__proto__", "constructor");

describe("CSV records (group-by's reader)", () => {
  it("the plain path gives the same records and errors as csv-parse on any quote-free, LF-only text", () => {
    fc.assert(
      fc.property(plainText, fieldName, fieldName, (input, keyField, valueField) => {
        expect(isPlainCsv(input)).toBe(true);
        expect(outcome(forEachPlainCsvRecord, input, keyField, valueField)).toEqual(
          outcome(forEachCsvRecordByLibrary, input, keyField, valueField),
        );
      }),
      { numRuns: 3000 },
    );
  });

  it("an ItemError thrown by the visit ends either path at the same record", () => {
    const input = "k,v\na,1\n\nb,2\nc,3\n";
    for (const read of [forEachPlainCsvRecord, forEachCsvRecordByLibrary]) {
      const seen: number[] = [];
      expect(() => {
        read(input, "k", "v", (record) => {
          seen.push(record);
          if (record === 3) throw new ItemError(`record ${record}: bad`);
        });
      }).toThrow("record 3: bad");
      expect(seen).toEqual([2, 3]);
    }
  });

  it("an error other than an ItemError thrown by the visit leaves either path as it was thrown (not as bad CSV)", () => {
    for (const read of [forEachPlainCsvRecord, forEachCsvRecordByLibrary]) {
      const thrown = new RangeError("out of room");
      let caught: unknown;
      try {
        read("k,v\na,1\n", "k", "v", () => {
          throw thrown;
        });
      } catch (error) {
        caught = error;
      }
      expect(caught, read.name).toBe(thrown);
    }
  });

  it.each([
    ["a quoted field", 'k,v\n"a, b",1\n'],
    ["CRLF line ends", "k,v\r\na,1\r\n"],
    ["a lone surrogate", "k,v\n\ud800,1\n"],
  ])("text with %s goes to csv-parse, and reads as csv-parse reads it", (_name, input) => {
    expect(isPlainCsv(input)).toBe(false);
    expect(outcome(forEachCsvRecord, input, "k", "v")).toEqual(outcome(forEachCsvRecordByLibrary, input, "k", "v"));
  });

  it("a record with more or fewer fields than the header fails the input, naming the line", () => {
    expect(outcome(forEachCsvRecord, "k,v\na,1\n\nb,2,3\n", "k", "v")).toEqual({
      visits: [[2, "a", "1"]],
      error:
        "ItemError: input is not valid CSV with a header row: Invalid Record Length: columns length is 2, got 3 on line 4",
    });
  });
});
