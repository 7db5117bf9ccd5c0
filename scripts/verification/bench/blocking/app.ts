/**
 * The Function app `npm run bench:blocking` runs on the local host (`LOCAL_APP_ENTRY`): the coordinator with a
 * group-by kind whose every item first holds the thread for `BENCH_BLOCK_MS` — what a user's kind doing synchronous
 * CPU work does to the process. It blocks with `Atomics.wait`, which holds the event loop exactly as a CPU-bound loop
 * does (no timer, no I/O callback runs) without spending the shared machine's CPU. Named `group-by` so that the local
 * host's demo job runs through it.
 */
import { app } from "@azure/functions";
import { defineTaskKind, groupByKind, registerCoordinator } from "../../../../src/index";

const blockMs = Number(process.env.BENCH_BLOCK_MS ?? "0");
const cell = new Int32Array(new SharedArrayBuffer(4));

const blockingGroupBy = defineTaskKind({
  ...groupByKind,
  process: (input, context) => {
    Atomics.wait(cell, 0, 0, blockMs);
    return groupByKind.process(input, context);
  },
});

export const coordinator = registerCoordinator(app, { taskKinds: [blockingGroupBy] });
