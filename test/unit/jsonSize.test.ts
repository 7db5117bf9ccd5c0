import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { jsonByteLength } from "../../src/coordination/state/jsonSize";

/** Any JSON-able value, with strings of any UTF-16 code units (lone surrogates, control characters) and odd members. */
const anyValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string({ unit: "binary" }),
    fc.string({ unit: "grapheme-ascii" }),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 5 }),
    fc.dictionary(fc.string({ unit: "binary" }), tie("value"), { maxKeys: 5 }),
  ),
})).value;

describe("jsonByteLength (issue 21, item 1)", () => {
  it("is the UTF-8 byte length of JSON.stringify for any value", () => {
    fc.assert(
      fc.property(anyValue, (value) => {
        const json = JSON.stringify(value) as string | undefined;
        expect(jsonByteLength(value)).toBe(json === undefined ? 0 : Buffer.byteLength(json));
      }),
      { numRuns: 2000 },
    );
  });

  it("honours toJSON, as JSON.stringify does", () => {
    const value = { at: new Date(0), nested: [{ toJSON: () => "é" }] };
    expect(jsonByteLength(value)).toBe(Buffer.byteLength(JSON.stringify(value)));
  });

  it("stops walking once past the limit: a document of huge keys is never walked (or built) whole", () => {
    let visited = 0;
    const groups = Array.from({ length: 1000 }, (_, n) => ({
      get key(): string {
        visited++;
        return `${n}`.padEnd(1_000_000, "x");
      },
    }));
    const measured = jsonByteLength(groups, 3_500_000);
    expect(measured).toBeGreaterThan(3_500_000);
    expect(visited).toBeLessThanOrEqual(4);
  });
});
