import { describe, expect, expectTypeOf, it } from "vitest";
import { clientOf } from "../../src/app/setup";
import { defineTaskKind, type AggregateOf, type JobStatus } from "../../src/index";
import { groupByKind, type GroupStats } from "../../src/groupBy/groupBy";
import { memoryApp } from "../support/memoryApp";

/**
 * A job's status typed by its kind where the caller names it (issue 44): `getJob`/`waitForJob(id, { kind })` give
 * `JobStatus<AggregateOf<typeof kind>>`, the aggregate as the kind's `view` makes it, and a job of another kind is
 * refused rather than typed wrongly.
 */
describe("JobStatus typed by the kind", () => {
  const words = defineTaskKind({
    name: "words",
    process: (input) => ({ words: input.text.split(" ").length }),
    aggregate: {
      empty: () => ({ words: 0 }),
      merge: (a, b) => ({ words: a.words + b.words }),
      view: (total) => ({ total: total.words }),
    },
  });
  const letters = defineTaskKind({
    name: "letters",
    process: (input) => input.text.length,
    aggregate: { empty: () => 0, merge: (a, b) => a + b },
  });

  /** A client over in-memory storage, and a group-by job submitted through it. */
  async function submittedGroupBy(): Promise<{ client: ReturnType<typeof clientOf>; id: string }> {
    const { app } = memoryApp();
    const client = clientOf(() => app);
    const submitted = await client.submitJob({
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: "region,amount\neu,3\n" }],
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    return { client, id: submitted.id };
  }

  it("AggregateOf is the view's type, or the partial's when the kind has no view", () => {
    expectTypeOf<AggregateOf<typeof words>>().toEqualTypeOf<{ total: number }>();
    expectTypeOf<AggregateOf<typeof letters>>().toEqualTypeOf<number>();
    expectTypeOf<AggregateOf<typeof groupByKind>>().toEqualTypeOf<Record<string, GroupStats>>();
  });

  it("getJob and waitForJob with { kind } return the status typed by it; without, the aggregate is unknown", async () => {
    const { client, id } = await submittedGroupBy();
    const typed = await client.getJob(id, { kind: groupByKind });
    expectTypeOf(typed).toEqualTypeOf<JobStatus<Record<string, GroupStats>> | undefined>();
    expect(typed).toMatchObject({ id: id, kind: "group-by", status: "pending" });
    const plain = await client.getJob(id);
    expectTypeOf(plain).toEqualTypeOf<JobStatus | undefined>();
    expectTypeOf<ReturnType<typeof client.waitForJob<typeof words>>>().toEqualTypeOf<
      Promise<JobStatus<{ total: number }>>
    >();
  });

  it("naming another kind than the job's is refused, not typed wrongly", async () => {
    const { client, id } = await submittedGroupBy();
    await expect(client.getJob(id, { kind: words })).rejects.toThrow(`Job ${id} is of kind "group-by", not "words".`);
    await expect(client.waitForJob(id, { kind: letters })).rejects.toThrow(/not "letters"/);
  });
});
