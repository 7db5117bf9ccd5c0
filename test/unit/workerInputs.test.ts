import { describe, expect, it } from "vitest";
import { inputOf } from "../../src/coordination/worker/workerInputs";

/**
 * An item's input as the worker hands it to a kind (`TaskInput`): its text and its bytes, each made from the other
 * once, on first use, and the blob it came from. Made once per item, so it must cost next to nothing (issue 35).
 */
describe("inputOf", () => {
  it("gives an inline item's text, and its bytes as UTF-8, made once", () => {
    const input = inputOf(undefined, "päivä,1");
    expect(input.text).toBe("päivä,1");
    expect(Buffer.from(input.bytes).toString("utf8")).toBe("päivä,1");
    expect(input.bytes.byteLength).toBe(9);
    expect(input.bytes).toBe(input.bytes);
    expect(input.blob).toBeUndefined();
  });

  it("gives a blob's bytes as read, and its text decoded once", () => {
    const bytes = Buffer.from("key,2\n", "utf8");
    const input = inputOf(bytes, undefined, "in/a.csv");
    expect(input.bytes).toBe(bytes);
    expect(input.text).toBe("key,2\n");
    expect(input.blob).toBe("in/a.csv");
  });

  it("decodes only the bytes it was given, not the rest of their buffer", () => {
    const whole = Buffer.from("xxkey,3yy", "utf8");
    const input = inputOf(whole.subarray(2, 7), undefined, "b");
    expect(input.text).toBe("key,3");
  });

  it("gives empty text and bytes for an input with neither", () => {
    const input = inputOf(undefined, undefined);
    expect(input.text).toBe("");
    expect(input.bytes.byteLength).toBe(0);
  });

  it("keeps its bytes and text read-only to the kind", () => {
    const input = inputOf(undefined, "a");
    expect(() => {
      (input as { text: string }).text = "b";
    }).toThrow(TypeError);
    expect(input.text).toBe("a");
  });
});
