import { stringProperty } from "./bindings.js";
import type { InvocationResponse, RpcBindingInfo } from "./coreApi.js";
import type { QueueSettings } from "./hostConfig.js";
import { typedDataValue } from "./invoke.js";
import type { QueueClients } from "./queueClients.js";
import { encodeBody } from "azure-leader-coordinator/internal";
import type { RegisteredFunction } from "./registrations.js";

/**
 * Output bindings the local host writes after a successful handler: storage queue outputs (`output.storageQueue`,
 * binding type "queue"), encoded per host.json `messageEncoding`; an array value writes one message per element, as
 * the host does for Node. The HTTP `$return` is answered by the HTTP listener. Other output types are reported by
 * {@link unsupportedOutputs} at start-up and ignored (docs/LOCAL-HOST.md, "Known gaps").
 */

/** The binding types handled locally. */
const HANDLED_OUTPUT_TYPES = new Set(["queue", "http"]);
/** Queues this process has made sure exist (the host creates an output queue on first use). */
const createdQueues = new Set<string>();

/** Describes output bindings of `fn` the local host will not write, e.g. `"result (blob)"`. */
export function unsupportedOutputs(fn: RegisteredFunction): string[] {
  return Object.entries(fn.metadata.bindings)
    .filter(([, binding]) => binding.direction === "out" && !HANDLED_OUTPUT_TYPES.has(binding.type ?? ""))
    .map(([name, binding]) => `${name} (${binding.type ?? "unknown"})`);
}

/** Writes the queue outputs of one invocation. */
export async function writeQueueOutputs(
  fn: RegisteredFunction,
  response: InvocationResponse,
  clients: QueueClients,
  settings: QueueSettings,
  env: Record<string, string | undefined>,
): Promise<void> {
  for (const [name, binding] of Object.entries(fn.metadata.bindings)) {
    if (binding.direction !== "out" || binding.type !== "queue") continue;
    const data =
      name === "$return" ? response.returnValue : response.outputData?.find((output) => output.name === name)?.data;
    const value = typedDataValue(data);
    if (value === undefined || value === null) continue;
    const queue = queueFor(fn, binding, clients, env);
    if (!createdQueues.has(queue.url)) {
      await queue.createIfNotExists();
      createdQueues.add(queue.url);
    }
    for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) {
      await queue.sendMessage(encodeBody(messageText(item), settings.messageEncoding));
    }
  }
}

function queueFor(
  fn: RegisteredFunction,
  binding: RpcBindingInfo,
  clients: QueueClients,
  env: Record<string, string | undefined>,
) {
  const functionName = fn.metadata.name;
  const queueName = stringProperty(binding, "queueName", env, functionName);
  if (queueName === undefined) throw new Error(`Function "${functionName}": queue output has no queueName.`);
  return clients.queue(stringProperty(binding, "connection", env, functionName), queueName, functionName);
}

/** Strings go as they are, bytes as UTF-8 text, anything else as JSON. */
function messageText(item: unknown): string {
  if (typeof item === "string") return item;
  if (Buffer.isBuffer(item)) return item.toString("utf8");
  return JSON.stringify(item);
}
