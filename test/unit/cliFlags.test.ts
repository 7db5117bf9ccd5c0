/**
 * The command-line helpers every script shares (src/cli/flags.ts): each bad flag names itself and what is
 * allowed.
 */
import { describe, expect, it } from "vitest";
import { listFlag, numberFlag, parseFlags, pathFlag, UsageError } from "../../src/cli/flags";
import { scheduleFlag } from "../../dev/src/cli/scheduleFlag";

describe("parseFlags", () => {
  const options = { rounds: { type: "string" }, quick: { type: "boolean" } } as const;

  it("returns the values of known flags", () => {
    expect(parseFlags(["--rounds", "3", "--quick"], options)).toEqual({ rounds: "3", quick: true });
  });

  it.each([
    [["--nope"], /Unknown option '--nope'.*Run with --help for the flags\./],
    [["extra"], /Unexpected argument 'extra'.*Run with --help/],
    [["--rounds"], /Option '--rounds <value>' argument missing.*Run with --help/],
  ])("refuses %j with a UsageError that names it", (argv, message) => {
    expect(() => parseFlags(argv, options)).toThrow(UsageError);
    expect(() => parseFlags(argv, options)).toThrow(message);
  });
});

describe("numberFlag", () => {
  it("is undefined when not given, the number when in range", () => {
    expect(numberFlag(undefined, "--rounds", { min: 1, max: 10 })).toBeUndefined();
    expect(numberFlag("10", "--rounds", { min: 1, max: 10 })).toBe(10);
    expect(numberFlag("0.5", "--duration", { min: 0.1, max: 60, integer: false })).toBe(0.5);
  });

  it.each([
    ["0", { min: 1, max: 10 }, '--n must be a whole number from 1 to 10, got "0".'],
    ["11", { min: 1, max: 10 }, '--n must be a whole number from 1 to 10, got "11".'],
    ["2.5", { min: 1, max: 10 }, '--n must be a whole number from 1 to 10, got "2.5".'],
    ["", { min: 1, max: 10 }, '--n must be a whole number from 1 to 10, got "".'],
    ["abc", { min: 0, max: 1, integer: false }, '--n must be a number from 0 to 1, got "abc".'],
    [
      "Infinity",
      { min: 0, max: Number.MAX_VALUE, integer: false },
      `--n must be a number from 0 to ${Number.MAX_VALUE}, got "Infinity".`,
    ],
  ])("refuses %j for %j", (raw, range, message) => {
    expect(() => numberFlag(raw, "--n", range)).toThrow(new UsageError(message));
  });
});

describe("pathFlag, scheduleFlag, listFlag", () => {
  it("refuses an empty path and passes any other", () => {
    expect(pathFlag("out.json", "--out")).toBe("out.json");
    expect(pathFlag(undefined, "--out")).toBeUndefined();
    expect(() => pathFlag(" ", "--out")).toThrow("--out must be a file path, got an empty string.");
  });

  it("takes a six-field NCRONTAB schedule, the fallback when not given, and names what is wrong otherwise", () => {
    expect(scheduleFlag(undefined, "--schedule", "*/5 * * * * *")).toBe("*/5 * * * * *");
    expect(scheduleFlag(" 0 * * * * * ", "--schedule", "*/5 * * * * *")).toBe("0 * * * * *");
    expect(() => scheduleFlag("* * * * *", "--schedule", "*/5 * * * * *")).toThrow(
      /--schedule must be an NCRONTAB expression with six fields, seconds first \(e\.g\. "\*\/5 \* \* \* \* \*"\), got "\* \* \* \* \*"\.$/,
    );
    expect(() => scheduleFlag("99 * * * * *", "--schedule", "*/5 * * * * *")).toThrow(/got "99 \* \* \* \* \*": /);
  });

  it("takes names from the allowed list and names unknown ones with the allowed", () => {
    expect(listFlag(undefined, "--only", ["a", "b"])).toBeUndefined();
    expect(listFlag(" a, b ,", "--only", ["a", "b"])).toEqual(["a", "b"]);
    expect(() => listFlag("a,c,d", "--only", ["a", "b"])).toThrow("--only: unknown c, d; allowed: a, b.");
  });
});
