import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { defineTaskKind } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { ONE_PASS, readJob, work, world } from "../support/coordinationWorld";
import { silentLogger } from "../../src/library/util/logger";
import { fakeTerm } from "../support/memoryPorts";
import { abortReason } from "../../src/library/util/delay";

/**
 * Issue 37, hole 4: a shutdown (every deploy, every scale-in) on a unit's last delivery (host.json maxDequeueCount)
 * must not fail the items that delivery had already processed. The host moves a message whose last delivery threw to
 * the work poison queue, and the leader fails every item it names with "retries exhausted"; docs/how-to/add-a-kind.md
 * promises that a shutdown delivers the unit again instead. Items finished before a shutdown count as done, whatever
 * the delivery.
 */
describe("a shutdown on a unit's last delivery (issue 37, hole 4)", () => {
  it("fails no item: the unit goes out again, and every item of it counts as done, none as failed", async () => {
    const shutdown = new AbortController();
    const outputs = new Set<string>(); // what the kind wrote, named after each item's idempotency key
    let hold = true;
    let held = (): void => undefined;
    const heldItem = new Promise<void>((resolve) => (held = resolve));
    const writes = defineTaskKind({
      name: "writes",
      concurrency: 1, // items one after the other: items 0 and 1 finish before item 2 starts
      async process(_input, { index, idempotencyKey, abortSignal }) {
        if (index === 2 && hold) {
          held();
          await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
          throw new Error("interrupted by the shutdown");
        }
        outputs.add(idempotencyKey);
        return 1;
      },
    });
    const made = world({ registry: new TaskRegistry([writes]), workUnitMaxItems: 4 });
    const { deps, work: queue, poison } = made;
    const items = ["a", "b", "c", "d"].map((inline) => ({ inline }));
    const { id } = await storeSubmission(deps.system, { kind: "writes", params: null, items });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [message] = await queue.receive(1, 30);
    if (message === undefined) throw new Error("no work message was sent");

    // The fifth and last delivery: items 0 and 1 are done (their outputs written) when the host shuts down.
    const handling = processWorkMessage(
      deps,
      JSON.parse(message.text ?? "null"),
      { id: message.id, dequeueCount: 5, maxDequeueCount: 5 },
      { abortSignal: shutdown.signal },
    );
    await heldItem;
    expect([...outputs]).toEqual([`${id}/0`, `${id}/1`]);
    shutdown.abort(new Error("host shutting down"));
    // What the Functions host does with the message: a last delivery that threw goes to the poison queue; one that
    // returned is deleted.
    try {
      await handling;
    } catch {
      await poison.send([message.text ?? ""]);
    }
    await queue.delete(message);

    // A later instance, running on: whatever is on the work queue is processed, and the leader folds.
    hold = false;
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(made.state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 4, failedCount: 0, failures: [] });
    expect([...outputs].sort()).toEqual([0, 1, 2, 3].map((item) => `${id}/${item}`));
    expect(await poison.peek(32)).toEqual([]);
  });

  it("fails no item when the shutdown comes after the last item, while the result is being sent", async () => {
    // Found by the simulator (CI seed 20261190, `npm run simulate -- --seed 20261190 --invariants
    // noDoneItemFailedLater`): the host shut down as the unit's last item finished; the result's send, under the
    // shutdown signal, was aborted, and the delivery threw after every item was done.
    const shutdown = new AbortController();
    const outputs = new Set<string>();
    let strike = true;
    const writes = defineTaskKind({
      name: "writes",
      concurrency: 1,
      process(_input, { index, idempotencyKey }) {
        outputs.add(idempotencyKey);
        if (index === 1 && strike) shutdown.abort(new Error("host shutting down")); // as the last item finishes
        return Promise.resolve(1);
      },
    });
    const made = world({ registry: new TaskRegistry([writes]), workUnitMaxItems: 4 });
    const { deps, work: queue, poison } = made;
    // As the Storage SDK does, a send whose abort signal has fired is not made.
    const send = deps.resultsQueue.send.bind(deps.resultsQueue);
    deps.resultsQueue.send = (texts, options) =>
      options?.abortSignal?.aborted === true ? Promise.reject(abortReason(options.abortSignal)) : send(texts, options);
    const { id } = await storeSubmission(deps.system, {
      kind: "writes",
      params: null,
      items: [{ inline: "a" }, { inline: "b" }],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [message] = await queue.receive(1, 30);
    if (message === undefined) throw new Error("no work message was sent");

    let poisoned = false;
    try {
      const outcome = await processWorkMessage(
        deps,
        JSON.parse(message.text ?? "null"),
        { id: message.id, dequeueCount: 5, maxDequeueCount: 5 },
        { abortSignal: shutdown.signal },
      );
      expect(outcome.status).toBe("resent");
    } catch {
      poisoned = true; // what the Functions host does with a last delivery that threw
      await poison.send([message.text ?? ""]);
    }
    await queue.delete(message);

    strike = false;
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect({ poisoned, job: await readJob(made.state, id) }).toMatchObject({
      poisoned: false,
      job: { status: "completed", doneCount: 2, failedCount: 0, failures: [] },
    });
    expect([...outputs].sort()).toEqual([`${id}/0`, `${id}/1`]);
  });

  it("sends the unit again as it came when the payload is the message text (processWorkMessage takes the text or the parsed JSON)", async () => {
    // Found through the simulator, whose host passes the text: the copy was the text JSON-encoded again — a JSON
    // string, not a work message — which its next delivery would reject as malformed.
    const shutdown = new AbortController();
    const strikes = defineTaskKind({
      name: "strikes",
      process() {
        shutdown.abort(new Error("host shutting down"));
        return Promise.reject(new Error("interrupted by the shutdown"));
      },
    });
    const made = world({ registry: new TaskRegistry([strikes]), workUnitMaxItems: 4 });
    const { deps, work: queue } = made;
    await storeSubmission(deps.system, { kind: "strikes", params: null, items: [{ inline: "a" }] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [message] = await queue.receive(1, 30);
    if (message?.text === undefined) throw new Error("no work message was sent");
    const outcome = await processWorkMessage(
      deps,
      message.text,
      { id: message.id, dequeueCount: 5, maxDequeueCount: 5 },
      { abortSignal: shutdown.signal },
    );
    expect(outcome.status).toBe("resent");
    await queue.delete(message);
    const [copy] = await queue.receive(1, 30);
    expect(copy?.text).toBe(message.text);
  });

  it("when the unit cannot be sent again, the shutdown is thrown as before (the host poisons it), saying so in the log", async () => {
    const shutdown = new AbortController();
    let held = (): void => undefined;
    const heldItem = new Promise<void>((resolve) => (held = resolve));
    const waits = defineTaskKind({
      name: "waits",
      async process(_input, { abortSignal }) {
        held();
        await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
        throw new Error("interrupted");
      },
    });
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (message: string) => void warnings.push(message) };
    const made = world({ registry: new TaskRegistry([waits]), workUnitMaxItems: 4, logger });
    const { deps, work: queue } = made;
    await storeSubmission(deps.system, { kind: "waits", params: null, items: [{ inline: "a" }] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [message] = await queue.receive(1, 30);
    queue.send = () => Promise.reject(new Error("queue unavailable"));
    const handling = processWorkMessage(
      deps,
      JSON.parse(message?.text ?? "null"),
      { id: "m", dequeueCount: 5, maxDequeueCount: 5 },
      { abortSignal: shutdown.signal },
    );
    await heldItem;
    shutdown.abort(new Error("host shutting down"));
    await expect(handling).rejects.toThrow("host shutting down");
    expect(warnings).toEqual([
      expect.stringMatching(/sending the unit again failed; it goes to work-poison: queue unavailable/),
    ]);
  });
});
