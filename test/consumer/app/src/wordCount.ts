// A user's own task kind, in a module of its own: the app registers it (index.ts), and the user's unit test runs it
// alone (test/consumer/fixtures/wordCount.user-test.ts, through azure-leader-coordinator-dev's runKind).
import { defineTaskKind, ItemError } from "azure-leader-coordinator";

/** How long an item's "I/O" takes, in ms (its own app setting: the consumer tests slow a job down with it). */
const itemDelayMs = Number(process.env.WORD_COUNT_DELAY_MS ?? "2");

/** Counts words and letters of each text item; an item that is not text fails alone. */
export const wordCount = defineTaskKind({
  name: "word-count",
  concurrency: 4,
  async process(input, context) {
    // Stands for real I/O: the kind awaits, honours the signal, and names its output by the item's key.
    await new Promise<void>((resolve) => setTimeout(resolve, itemDelayMs));
    context.abortSignal.throwIfAborted();
    if (input.bytes.includes(0)) throw new ItemError(`item ${context.index} is not text`);
    const words = input.text.split(/\s+/).filter((word) => word !== "");
    return { words: words.length, letters: words.join("").length, keys: [context.idempotencyKey] };
  },
  aggregate: {
    empty: () => ({ words: 0, letters: 0, keys: [] as string[] }),
    merge: (a, b) => ({ words: a.words + b.words, letters: a.letters + b.letters, keys: [...a.keys, ...b.keys] }),
    view: (total) => ({ words: total.words, letters: total.letters, distinctKeys: new Set(total.keys).size }),
  },
});
