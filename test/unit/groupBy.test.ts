import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_ABS_VALUE, groupByView, groupRecords, mergeGroups, type GroupByPartial } from "../../src/groupBy/groupBy";
import { groupByPartialSchema } from "../../src/groupBy/groupBySchema";
import { ItemError } from "../../src/coordination/kinds/taskKinds";

const csv = { format: "csv", keyField: "region", valueField: "amount" } as const;
const ndjson = { format: "ndjson", keyField: "region", valueField: "amount" } as const;

describe("group-by task kind (unit)", () => {
  it("aggregates count, sum, min and max per key over CSV with quoted fields", () => {
    const partial = groupRecords('region,amount\neu,3\n"us, east",4.25\neu,-1\n', csv);
    expect(groupByView(partial)).toEqual({
      eu: { count: 2, sum: 2, min: -1, max: 3 },
      "us, east": { count: 1, sum: 4.25, min: 4.25, max: 4.25 },
    });
  });

  it("aggregates NDJSON, treating keys like __proto__ and constructor as plain data", () => {
    const input = [
      '{"region":"__proto__","amount":1}',
      '{"region":"constructor","amount":2}',
      "",
      '{"region":"__proto__","amount":5}',
    ].join("\n");
    const view = groupByView(groupRecords(input, ndjson));
    expect(Object.keys(view).sort()).toEqual(["__proto__", "constructor"]);
    expect(Object.getOwnPropertyDescriptor(view, "__proto__")?.value).toEqual({ count: 2, sum: 6, min: 1, max: 5 });
    expect(Object.getPrototypeOf(view)).toBe(Object.prototype);
  });

  it.each([
    ["a value that is not a number", '{"region":"eu","amount":"lots"}', /not a number/],
    ["a value out of range", '{"region":"eu","amount":1e300}', /out of range/],
    ["a missing key field", '{"amount":3}', /"region" is missing/],
    ["a line that is not JSON", "{nope", /line 1 is not valid JSON/],
  ])("rejects %s with an ItemError that says which record", (_name, input, message) => {
    expect(() => groupRecords(input, ndjson)).toThrow(ItemError);
    expect(() => groupRecords(input, ndjson)).toThrow(message);
  });

  it("merges partials exactly the same in any order and grouping (associative, commutative, exact sums)", () => {
    const partials: GroupByPartial[] = Array.from({ length: 30 }, (_, i) =>
      groupRecords(`region,amount\n${["a", "b", "c"][i % 3] ?? "a"},${(i * 0.1).toFixed(1)}\nb,0.7\n`, csv),
    );
    const leftFold = partials.reduce<GroupByPartial>((acc, p) => mergeGroups(acc, p), []);
    let seed = 7;
    const shuffled = [...partials].sort(() => ((seed = (seed * 16807) % 2147483647) % 3) - 1);
    const pairwise = (list: GroupByPartial[]): GroupByPartial =>
      list.length === 1
        ? (list[0] ?? [])
        : mergeGroups(pairwise(list.slice(0, list.length >> 1)), pairwise(list.slice(list.length >> 1)));
    expect(pairwise(shuffled)).toEqual(leftFold);
    expect(groupByView(leftFold).b?.sum).toBe(
      Number((0.1 * (1 + 4 + 7 + 10 + 13 + 16 + 19 + 22 + 25 + 28) + 0.7 * 30).toFixed(6)),
    );
  });

  it("merges partials that are not sorted or repeat a key (valid, from any producer) like sorted ones", () => {
    const sorted: GroupByPartial = [
      ["a", 1, "1000000", 1, 1],
      ["b", 2, "5000000", 2, 3],
    ];
    const unsorted: GroupByPartial = [
      ["b", 1, "4000000", 4, 4],
      ["a", 1, "-1000000", -1, -1],
      ["b", 1, "1000000", 1, 1],
    ];
    expect(mergeGroups(sorted, unsorted)).toEqual([
      ["a", 2, "0", -1, 1],
      ["b", 4, "10000000", 1, 4],
    ]);
    expect(mergeGroups(unsorted, sorted)).toEqual(mergeGroups(sorted, unsorted));
  });

  it("sums every group's values exactly in millionths, however large the sum grows (against BigInt arithmetic)", () => {
    // Values up to ±1e12 with up to 6 decimals: millionths up to 1e18, past 2^53, so a sum in doubles would round.
    const amount = fc.oneof(
      fc.integer({ min: -1_000_000, max: 1_000_000 }).map((n) => n / 1e6),
      fc.constantFrom(MAX_ABS_VALUE, -MAX_ABS_VALUE, 9_007_199_254.74, -9_007_199_254.74, 4_503_599_627.37, 0.000001),
      fc.double({ min: -MAX_ABS_VALUE, max: MAX_ABS_VALUE, noNaN: true }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom("a", "b"), amount), { minLength: 1, maxLength: 40 }), (rows) => {
        const expected = new Map<string, bigint>();
        for (const [key, value] of rows) expected.set(key, (expected.get(key) ?? 0n) + BigInt(Math.round(value * 1e6)));
        const ndjsonText = rows.map(([key, value]) => JSON.stringify({ region: key, amount: value })).join("\n");
        const sums = groupRecords(ndjsonText, ndjson).map(([key, , sum]) => [key, sum]);
        expect(sums).toEqual([...expected].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, v.toString()]));
      }),
      { numRuns: 2000 },
    );
  });

  it("merges sums of any size exactly (against BigInt arithmetic)", () => {
    const micros = fc.oneof(
      fc.bigInt({ min: -(10n ** 16n), max: 10n ** 16n }),
      fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }),
      fc.constantFrom(999_999_999_999_999n, -999_999_999_999_999n, 9_007_199_254_740_991n, 0n),
    );
    fc.assert(
      fc.property(micros, micros, (a, b) => {
        const merged = mergeGroups([["k", 1, a.toString(), 0, 0]], [["k", 1, b.toString(), 0, 0]]);
        expect(merged[0]?.[2]).toBe((a + b).toString());
      }),
      { numRuns: 3000 },
    );
  });

  it("validates a partial entry by entry, naming the path of the first bad one", () => {
    expect(groupByPartialSchema.safeParse([["a", 1, "1000000", 1, 1]]).success).toBe(true);
    const bad = groupByPartialSchema.safeParse([
      ["a", 1, "1000000", 1, 1],
      ["b", -2, "1", 1, 1],
    ]);
    expect(bad.error?.issues[0]).toMatchObject({ path: [1, 1] });
    expect(groupByPartialSchema.safeParse({ a: 1 }).error?.issues[0]?.message).toMatch(/expected an array/);
    expect(groupByPartialSchema.safeParse([["a", 1, "1.5", 1, 1]]).error?.issues[0]).toMatchObject({
      path: [0, 2],
    });
    expect(groupByPartialSchema.safeParse([["a", 1, "1", Number.NaN, 1]]).success).toBe(false);
  });
});
