// The app's one registration: the coordinator with its task kinds. Add your own kinds beside this one
// (https://github.com/azure-leader-coordinator/azure-leader-coordinator/blob/main/docs/TASK-KINDS.md).
import { app } from "@azure/functions";
import { defineTaskKind, registerCoordinator } from "azure-leader-coordinator";
import { z } from "zod";

/** Counts the words of each item's text; the job's aggregate is the total. */
export const wordCount = defineTaskKind({
  name: "word-count",
  params: z.object({}),
  process: (input) => ({ words: input.text.split(/\s+/).filter(Boolean).length }),
  aggregate: { empty: () => ({ words: 0 }), merge: (a, b) => ({ words: a.words + b.words }) },
});

export const coordinator = registerCoordinator(app, { taskKinds: [wordCount] });
