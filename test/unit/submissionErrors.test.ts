import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { validateSubmission } from "../../src/coordination/jobs/submit";

/**
 * A submission that fails several checks reports all of them at once (issue 33): the fields the schema refuses, the
 * choice of items or manifest, the deadline, the task kind and the kind's params — each naming what was wrong and what
 * is allowed — so a user fixes a request in one round, not one error per try.
 */

const NOW = Date.parse("2026-05-01T12:00:00Z");

function errorsOf(body: unknown): { field: string; message: string }[] {
  const result = validateSubmission(body, createRegistry(), NOW);
  return result.ok ? [] : result.errors;
}

describe("a submission with several faults", () => {
  it("names every faulty field: an unknown key, no items, a bad timeout, both a deadline and a timeout, an unknown kind", () => {
    const errors = errorsOf({ kind: "mystery", items: [], timeoutS: 0.5, deadline: "2020-01-01T00:00:00Z", x: 1 });
    expect(errors.map((error) => error.field).sort()).toEqual(["(body)", "deadline", "items", "kind", "timeoutS"]);
    expect(errors).toEqual(
      expect.arrayContaining([
        {
          field: "(body)",
          message:
            'unknown field "x"; a submission has kind, params, items, manifest, deadline, timeoutS, priority, fairnessKey, notBefore, idempotencyKey, limits',
        },
        { field: "items", message: "a job needs at least one item" },
        { field: "timeoutS", message: "must be a whole number of seconds from 1 to 604800" },
        { field: "deadline", message: "give either deadline or timeoutS, not both" },
        { field: "kind", message: 'unknown task kind "mystery"; known kinds: group-by' },
      ]),
    );
  });

  it("reports a bad item beside the kind's bad params, and a deadline in the past beside neither items nor manifest", () => {
    expect(
      errorsOf({ kind: "group-by", params: { format: "xml", keyField: "k", valueField: "v" }, items: [{ text: "x" }] })
        .map((error) => error.field)
        .sort(),
    ).toEqual(["items.0", "params.format"]);
    expect(errorsOf({ kind: "group-by", deadline: "2020-01-01T00:00:00Z" })).toEqual(
      expect.arrayContaining([
        { field: "deadline", message: "must be in the future (it is now 2026-05-01T12:00:00.000Z)" },
        { field: "items", message: expect.stringMatching(/exactly one of "items" .* or "manifest"/) as unknown },
      ]),
    );
  });

  it("a body that is not an object has one problem, saying what a submission is", () => {
    expect(errorsOf([1, 2])).toEqual([
      {
        field: "(body)",
        message:
          "a job submission is a JSON object with kind, params, items, manifest, deadline, timeoutS, priority, fairnessKey, notBefore, idempotencyKey, limits",
      },
    ]);
  });
});
