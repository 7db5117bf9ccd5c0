import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { validateSubmission } from "../../src/coordination/jobs/submit";

/**
 * The submission's flow-control fields (docs/how-to/limit.md): each bad value is named with what is allowed, beside
 * every other fault of the submission. The same through the HTTP API on Azurite, with nothing stored:
 * `test/integration/flowControlInput.test.ts`.
 */

const NOW = Date.parse("2026-05-01T12:00:00Z");
const good = {
  kind: "group-by",
  params: { format: "csv", keyField: "k", valueField: "v" },
  items: [{ inline: "k,v" }],
};

function errorsOf(fields: Record<string, unknown>): { field: string; message: string }[] {
  const result = validateSubmission({ ...good, ...fields }, createRegistry(), NOW);
  return result.ok ? [] : result.errors;
}

describe("flow-control fields of a submission", () => {
  it.each([
    ["priority", 0, /whole number from 1 \(most urgent\) to 9 \(least\); 5 when not given/],
    ["priority", 10, /from 1 \(most urgent\) to 9/],
    ["priority", 2.5, /whole number from 1/],
    ["priority", "1", /whole number from 1/],
    ["fairnessKey", "", /string of 1 to 128 characters/],
    ["fairnessKey", "t".repeat(129), /string of 1 to 128 characters/],
    ["fairnessKey", "€".repeat(100), /at most 256 bytes as UTF-8/],
    ["fairnessKey", "a\nb", /no control characters/],
    ["fairnessKey", "a\u0085b", /no control characters/],
    ["fairnessKey", 42, /string of 1 to 128 characters/],
    ["notBefore", "tomorrow", /ISO 8601 time with a time zone/],
    ["notBefore", "2026-05-02T12:00:00", /ISO 8601 time with a time zone/],
    ["notBefore", 1_777_000_000_000, /ISO 8601 time with a time zone/],
    ["notBefore", "2026-05-09T12:00:01Z", /at most 7 days \(604800 s\) ahead/],
    ["idempotencyKey", "", /1 to 200 printable ASCII characters/],
    ["idempotencyKey", "k".repeat(201), /1 to 200 printable ASCII characters/],
    ["idempotencyKey", "clé", /printable ASCII/],
    ["idempotencyKey", 7, /printable ASCII/],
  ])("%s %j is refused, naming what is allowed", (field, value, message) => {
    const errors = errorsOf({ [field]: value });
    expect(errors).toEqual([{ field, message: expect.stringMatching(message) as unknown }]);
  });

  it.each([
    ["priority", 1],
    ["priority", 9],
    ["fairnessKey", "t".repeat(128)],
    ["fairnessKey", "tenant ü 7"],
    ["notBefore", "2026-05-08T12:00:00Z"],
    ["notBefore", "2020-01-01T00:00:00+02:00"], // in the past: starts at once
    ["idempotencyKey", "k".repeat(200)],
    ["idempotencyKey", "~ 8e03978e-40d5-43e8-bc93-6894a57f9324 !"],
  ])("%s %j is accepted", (field, value) => {
    expect(errorsOf({ [field]: value })).toEqual([]);
  });

  it("notBefore must come before the deadline (given as a time or as timeoutS)", () => {
    expect(errorsOf({ notBefore: "2026-05-01T13:00:00Z", deadline: "2026-05-01T13:00:00Z" })).toEqual([
      {
        field: "notBefore",
        message: expect.stringMatching(/before the job's deadline \(2026-05-01T13:00:00.000Z\)/) as unknown,
      },
    ]);
    expect(errorsOf({ notBefore: "2026-05-01T13:00:00Z", timeoutS: 600 })).toEqual([
      {
        field: "notBefore",
        message: expect.stringMatching(/before the job's deadline \(2026-05-01T12:10:00.000Z\)/) as unknown,
      },
    ]);
    expect(errorsOf({ notBefore: "2026-05-01T12:05:00Z", timeoutS: 600 })).toEqual([]);
  });

  it("names every bad flow-control field at once, beside the other faults", () => {
    const errors = errorsOf({ priority: 0, fairnessKey: "", notBefore: "soon", idempotencyKey: "", kind: "mystery" });
    expect(errors.map((error) => error.field).sort()).toEqual([
      "fairnessKey",
      "idempotencyKey",
      "kind",
      "notBefore",
      "priority",
    ]);
  });
});
