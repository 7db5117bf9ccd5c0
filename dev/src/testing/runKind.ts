import type { AggregateOf, Logger, TaskKind } from "azure-leader-coordinator";
import {
  ConfigurationError,
  inputOf,
  TaskRegistry,
  validateSubmission,
  type Abortable,
} from "azure-leader-coordinator/internal";

/**
 * A task kind run alone, in this process, in milliseconds: no storage, no host, no cluster. The items go through the
 * kind as a worker hands them over — the same checks of the job (kind, params by the kind's schema and within 4 KiB,
 * items and their sizes) as a submission gets, the same input (bytes and text), context (`jobId`, `index`,
 * `idempotencyKey` = `<jobId>/<index>`, an abort signal, a logger) and concurrency — and each partial goes through JSON
 * and the aggregate's schema, as it does on its way to the leader, which folds them with `merge` and reads the result
 * through `view`. What it does not do: deliver a unit again after a transient error (it reports the error), or run
 * items on several instances (see `startTestCluster` for that).
 */

/** One item's input: text (an inline item) or a blob's name with the bytes your test gives as its content. */
export type KindInput = string | { inline: string } | { blob: string; content: Uint8Array | string };

/** Options of {@link runKind}. */
export interface RunKindOptions extends Abortable {
  /** The job's params, as a submission gives them (checked by the kind's schema). @default none (`null`) */
  params?: unknown;
  /** The job's id in the context and the idempotency keys. @default "job-under-test" */
  jobId?: string;
  /** Where the kind's logger writes. @default every line kept in {@link KindRun.logs} only */
  logger?: Logger;
  /** Items at once. @default the kind's `concurrency`, else 1 (the app setting WORK_UNIT_CONCURRENCY's default) */
  concurrency?: number;
}

/** How one item went. */
export type ItemOutcome<Partial> =
  /** `process` returned: its partial, as the leader gets it (through JSON). */
  | { index: number; status: "done"; partial: Partial }
  /** It threw {@link ItemError} (or its partial was refused): the item fails alone, with this reason. */
  | { index: number; status: "failed"; reason: string }
  /**
   * It threw another error: in a deployed app its unit is delivered again (up to 5 times), and the item fails with
   * the error only on the last delivery.
   */
  | { index: number; status: "transient-error"; error: unknown };

/** A line the kind logged. */
export interface KindLogLine {
  level: "verbose" | "info" | "warn" | "error";
  message: string;
  properties?: Record<string, unknown>;
}

/** What {@link runKind} saw. */
export interface KindRun<Partial, Aggregate> {
  /** Each item's outcome, in item order. */
  items: ItemOutcome<Partial>[];
  /** Items done, and failed (an ItemError or a refused partial); transient errors are neither. */
  done: number;
  failed: number;
  /**
   * The job's aggregate as its status would show it had every item ended as here: the done items' partials merged and
   * viewed; `null` for a kind without an aggregate.
   */
  aggregate: Aggregate | null;
  /** Every line the kind logged, in order. */
  logs: KindLogLine[];
}

/**
 * Runs `kind` on `inputs` as one job would (see above), and returns each item's outcome and the aggregate.
 *
 * @example
 * ```ts
 * const run = await runKind(wordCount, ["a b c", "d e"], { params: { minLength: 1 } });
 * expect(run.aggregate).toEqual({ words: 5 });
 * ```
 *
 * @throws ConfigurationError when the kind is not usable, or the job would be refused (an unknown or bad params, a bad
 *   item): the message names each field as the HTTP route's 400 does.
 */
export async function runKind<Kind extends TaskKind>(
  kind: Kind,
  inputs: readonly KindInput[],
  options: RunKindOptions = {},
): Promise<KindRun<PartialOf<Kind>, AggregateOf<Kind>>> {
  const registered = new TaskRegistry([kind]).get(kind.name);
  if (registered === undefined) throw new ConfigurationError(`Task kind "${kind.name}" did not register.`);
  const items = inputs.map((input) =>
    typeof input === "string" ? { inline: input } : "inline" in input ? { inline: input.inline } : { blob: input.blob },
  );
  const checked = validateSubmission({ kind: kind.name, params: options.params, items }, new TaskRegistry([kind]));
  if (!checked.ok)
    throw new ConfigurationError(
      `The job would be refused: ${checked.errors.map((error) => `${error.field}: ${error.message}`).join("; ")}`,
    );
  const params = checked.value.params;
  const jobId = options.jobId ?? "job-under-test";
  const logs: KindLogLine[] = [];
  const logger = recordingLogger(logs, options.logger);
  const signal = options.abortSignal ?? new AbortController().signal;
  const outcomes: ItemOutcome<unknown>[] = [];
  const runItem = async (index: number): Promise<void> => {
    const input = inputs[index];
    const data =
      input === undefined || typeof input === "string" || "inline" in input
        ? inputOf(undefined, typeof input === "string" ? input : (input?.inline ?? ""))
        : inputOf(
            typeof input.content === "string" ? Buffer.from(input.content) : input.content,
            undefined,
            input.blob,
          );
    try {
      signal.throwIfAborted();
      const context = { params, jobId, index, idempotencyKey: `${jobId}/${index}`, abortSignal: signal, logger };
      const produced: unknown = await registered.process(data, context);
      outcomes[index] = partialOutcome(registered, index, produced);
    } catch (error) {
      outcomes[index] = isItemError(error)
        ? { index, status: "failed", reason: error.message }
        : { index, status: "transient-error", error };
    }
  };
  await atMost(options.concurrency ?? kind.concurrency ?? 1, inputs.length, runItem);
  const done = outcomes.filter((outcome) => outcome.status === "done");
  const merged = done.reduce((total, outcome) => registered.merge(total, outcome.partial), registered.empty());
  return {
    items: outcomes as ItemOutcome<PartialOf<Kind>>[],
    done: done.length,
    failed: outcomes.filter((outcome) => outcome.status === "failed").length,
    aggregate: (registered.hasAggregate ? registered.view(merged) : null) as AggregateOf<Kind> | null,
    logs,
  };
}

/** What a kind's `process` returns (its partial result). */
export type PartialOf<Kind> = Kind extends TaskKind<unknown, infer Partial, unknown> ? Partial : unknown;

/** The partial as the leader gets it: through JSON (a worker sends it in a queue message), then the kind's schema. */
function partialOutcome(
  kind: ReturnType<TaskRegistry["get"]> & object,
  index: number,
  produced: unknown,
): ItemOutcome<unknown> {
  if (!kind.hasAggregate) return { index, status: "done", partial: null };
  const json = JSON.stringify(produced) as string | undefined;
  if (json === undefined)
    return { index, status: "failed", reason: `its partial (${typeof produced}) does not survive JSON` };
  const parsed = kind.parsePartial(JSON.parse(json));
  if (!parsed.ok) return { index, status: "failed", reason: `its partial was refused by the schema: ${parsed.reason}` };
  return { index, status: "done", partial: parsed.value };
}

/** An {@link ItemError} of any copy of the package (the kind's and this tool's may differ). */
function isItemError(error: unknown): error is Error {
  return error instanceof Error && (error as { code?: unknown }).code === "InvalidItem";
}

/** A logger that keeps each line, and passes it on to `next`. */
function recordingLogger(lines: KindLogLine[], next: Logger | undefined): Logger {
  const at =
    (level: KindLogLine["level"]) =>
    (message: string, properties?: Record<string, unknown>): void => {
      lines.push({ level, message, ...(properties === undefined ? {} : { properties }) });
      next?.[level](message, properties);
    };
  return { verbose: at("verbose"), info: at("info"), warn: at("warn"), error: at("error") };
}

/** Runs `run(0)`…`run(count - 1)`, at most `limit` at once. */
async function atMost(limit: number, count: number, run: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) await run(next++);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, count)) }, lane));
}
