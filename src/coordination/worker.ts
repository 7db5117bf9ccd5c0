import type { CoordinationDeps } from "./deps";
import { keys } from "./jobState";
import { itemRefOf, parseMessage, workMessageSchema, type Rejection, type ResultMessage } from "./messages";
import type { PortOptions } from "./ports";
import { ItemError } from "./taskKinds";

/** What the worker needs: a subset of the coordination deps (malformed messages go to `workPoisonQueue`). */
export type WorkerDeps = Pick<CoordinationDeps, "system" | "inputs" | "resultsQueue" | "workPoisonQueue" | "registry" | "logger" | "emit" | "instanceId" | "now">;

/** Delivery facts the host gives the trigger. */
export interface Delivery {
  /** The queue message id. */
  id: string;
  /** 1 on first delivery. */
  dequeueCount: number;
  /** host.json `extensions.queues.maxDequeueCount`: on this delivery a failure is final. */
  maxDequeueCount: number;
}

/** How the worker handled a message. */
export type WorkOutcome =
  | { status: "processed"; jobId: string; item: number }
  | { status: "failed"; jobId: string; item: number; reason: string }
  | { status: "rejected"; reason: string };

/** Partials larger than this go to a blob; the result message names it (queue messages hold 64 KiB base64). */
const MAX_INLINE_PARTIAL_BYTES = 40 * 1024;

/**
 * Handles one work message. Never lets bad input crash the worker: a malformed message is moved to the poison queue
 * with the reason at once (retrying cannot fix it); an item whose input is unusable is reported as failed; a
 * transient failure is thrown so the host retries it, and on the last delivery it is also reported as failed so the
 * job can finish.
 */
export async function processWorkMessage(deps: WorkerDeps, payload: unknown, delivery: Delivery, options: PortOptions = {}): Promise<WorkOutcome> {
  const parsed = parseMessage(workMessageSchema, payload);
  if (!parsed.ok) return reject(deps, payload, delivery, parsed.reason, options);
  const message = parsed.value;
  const kind = deps.registry.get(message.kind);
  if (kind === undefined) return reject(deps, payload, delivery, `unknown task kind "${message.kind}"; known kinds: ${deps.registry.names().join(", ")}`, options);
  const params = kind.paramsSchema.safeParse(message.params);
  if (!params.success) return reject(deps, payload, delivery, `params are not valid for "${message.kind}": ${params.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`, options);

  const { jobId, item } = message;
  try {
    const input = "inline" in message.input ? message.input.inline : await deps.inputs.readText(message.input.blob, options);
    if (input === undefined) throw new ItemError(`input blob "${"blob" in message.input ? message.input.blob : ""}" does not exist`);
    const partial = kind.process(input, params.data);
    await sendResult(deps, { v: 1, jobId, item, ok: true, partial }, options);
    return { status: "processed", jobId, item };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (error instanceof ItemError) {
      await sendResult(deps, { v: 1, jobId, item, ok: false, reason }, options);
      return { status: "failed", jobId, item, reason };
    }
    if (delivery.dequeueCount >= delivery.maxDequeueCount) {
      await sendResult(deps, { v: 1, jobId, item, ok: false, reason: `failed on all ${delivery.maxDequeueCount} deliveries; last error: ${reason}` }, options);
    }
    throw error; // transient: let the host retry, and poison it after the last delivery
  }
}

async function sendResult(deps: WorkerDeps, result: ResultMessage, options: PortOptions): Promise<void> {
  let text = JSON.stringify(result);
  if (result.ok && Buffer.byteLength(text) > MAX_INLINE_PARTIAL_BYTES) {
    const blob = keys.partial(result.jobId, result.item);
    await deps.system.writeText(blob, JSON.stringify(result.partial), options);
    text = JSON.stringify({ v: 1, jobId: result.jobId, item: result.item, ok: true, partialBlob: blob } satisfies ResultMessage);
  }
  await deps.resultsQueue.send([text], options);
}

async function reject(deps: WorkerDeps, payload: unknown, delivery: Delivery, reason: string, options: PortOptions): Promise<WorkOutcome> {
  const original = typeof payload === "string" ? payload : (JSON.stringify(payload) as string | undefined) ?? String(payload);
  deps.logger.warn(`Work message ${delivery.id} rejected to ${deps.workPoisonQueue.name}: ${reason}`, { instanceId: deps.instanceId });
  deps.emit({ type: "message-rejected", instanceId: deps.instanceId, atMs: deps.now(), queue: "work", messageId: delivery.id, reason });
  // Naming the job and item, when the message got that far, lets the leader record the item as failed with the reason.
  const rejection: Rejection & { rejected: { messageId: string; atMs: number } } = {
    rejected: { by: "worker", reason, messageId: delivery.id, atMs: deps.now(), ...itemRefOf(payload) },
    original: original.slice(0, 16_000),
  };
  await deps.workPoisonQueue.send([JSON.stringify(rejection)], options);
  return { status: "rejected", reason };
}
