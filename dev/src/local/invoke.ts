import { randomUUID } from "node:crypto";
import type {
  CoreInvocationContext,
  InvocationResponse,
  ProgrammingModel,
  RpcLogCategory,
  RpcLogLevel,
  RpcTypedData,
} from "./coreApi.js";
import type { RegisteredFunction } from "./registrations.js";
import { findTrigger } from "./bindings.js";

/**
 * Runs one invocation the way the Node worker does: the trigger value and metadata go in as worker data, and the
 * library's own invocation model builds the `InvocationContext` (with our log handler), converts the arguments
 * (`fromRpcTypedData`: strings are JSON-parsed when they can be; trigger metadata keys camel-cased) and converts the
 * result back. So what a handler sees locally is what it sees under the real worker.
 */

/** One log line from the host or a function. */
export interface HostLogEntry {
  level: RpcLogLevel;
  /** "user" for the function's own `context.log`, "system" for the library, "host" for this host. */
  category: RpcLogCategory | "host";
  functionName?: string;
  invocationId?: string;
  message: string;
}

/** Where log lines go. */
export type HostLogSink = (entry: HostLogEntry) => void;

/** What triggered an invocation. */
export interface TriggerInput {
  /** The trigger value as worker data (e.g. `{ string: messageText }`). */
  data: RpcTypedData;
  /** Trigger metadata as the host sends it (PascalCase keys; the library camel-cases them). */
  metadata?: Record<string, RpcTypedData>;
  /** For the host's "Executing" line, e.g. "New queue message detected on 'work-items'.". */
  reason: string;
}

/** How an invocation ended. */
export type InvocationOutcome =
  | { ok: true; invocationId: string; durationMs: number; response: InvocationResponse }
  | { ok: false; invocationId: string; durationMs: number; error: Error };

/** Runs a function for a trigger: what listeners are handed, so they need not know the model or output bindings. */
export type Invoker = (fn: RegisteredFunction, input: TriggerInput) => Promise<InvocationOutcome>;

/**
 * Invokes `fn` once with `input`, logging "Executing"/"Executed" lines as the host does. `writeOutputs` runs after
 * the handler; when it throws, the invocation failed (the host flushes output bindings as part of the invocation).
 * `slowdownMs` delays the handler after the "Executing" line (fault injection). Never throws.
 */
export async function invokeFunction(
  fn: RegisteredFunction,
  model: ProgrammingModel,
  input: TriggerInput,
  log: HostLogSink,
  writeOutputs: (response: InvocationResponse) => Promise<void> = () => Promise.resolve(),
  slowdownMs = 0,
): Promise<InvocationOutcome> {
  const functionName = fn.metadata.name;
  const invocationId = randomUUID();
  const started = Date.now();
  const coreContext: CoreInvocationContext = {
    invocationId,
    request: {
      invocationId,
      functionId: functionName,
      inputData: [{ name: findTrigger(fn.metadata).name, data: input.data }],
      triggerMetadata: input.metadata ?? {},
    },
    metadata: fn.metadata,
    state: undefined,
    log: (level: RpcLogLevel, category: RpcLogCategory, message: string) => {
      log({ level, category, functionName, invocationId, message });
    },
  };
  log({
    level: "information",
    category: "host",
    functionName,
    invocationId,
    message: `Executing 'Functions.${functionName}' (Reason='${input.reason}', Id=${invocationId})`,
  });
  try {
    // Fault injection (LOCAL_INVOKE_DELAY_MS): slow work, so a chaos test can kill an instance mid-invocation.
    if (slowdownMs > 0) await new Promise((done) => setTimeout(done, slowdownMs));
    const invocationModel = model.getInvocationModel(coreContext);
    const { context, inputs } = await invocationModel.getArguments();
    coreContext.state = "invocation";
    const result = await invocationModel.invokeFunction(context, inputs, fn.callback);
    const response = await invocationModel.getResponse(context, result);
    await writeOutputs(response);
    const durationMs = Date.now() - started;
    log({
      level: "information",
      category: "host",
      functionName,
      invocationId,
      message: `Executed 'Functions.${functionName}' (Succeeded, Id=${invocationId}, Duration=${durationMs}ms)`,
    });
    return { ok: true, invocationId, durationMs, response };
  } catch (thrown) {
    const error = thrown instanceof Error ? thrown : new Error(String(thrown));
    const durationMs = Date.now() - started;
    log({
      level: "error",
      category: "host",
      functionName,
      invocationId,
      message: `Executed 'Functions.${functionName}' (Failed, Id=${invocationId}, Duration=${durationMs}ms): ${error.stack ?? error.message}`,
    });
    return { ok: false, invocationId, durationMs, error };
  } finally {
    coreContext.state = undefined;
  }
}

/**
 * An execution that failed before the function ran — its trigger could not be bound (a queue body that is not
 * UTF-8) — logged as the host logs it: "Executing", then "Executed … (Failed …)" with the binding error. For the
 * listener it is a failure like any other (the message's retries and poison follow).
 */
export function failedBinding(
  fn: RegisteredFunction,
  reason: string,
  bindingError: string,
  log: HostLogSink,
): InvocationOutcome {
  const functionName = fn.metadata.name;
  const invocationId = randomUUID();
  const parameter = findTrigger(fn.metadata).name;
  log({
    level: "information",
    category: "host",
    functionName,
    invocationId,
    message: `Executing 'Functions.${functionName}' (Reason='${reason}', Id=${invocationId})`,
  });
  const error = new Error(`Exception binding parameter '${parameter}': ${bindingError}`);
  log({
    level: "error",
    category: "host",
    functionName,
    invocationId,
    message: `Executed 'Functions.${functionName}' (Failed, Id=${invocationId}, Duration=0ms): ${error.message}`,
  });
  return { ok: false, invocationId, durationMs: 0, error };
}

/** Reads the value a typed datum holds, for output bindings: strings stay strings, JSON is parsed. */
export function typedDataValue(data: RpcTypedData | null | undefined): unknown {
  if (data === null || data === undefined) return undefined;
  if (data.string !== undefined) return data.string;
  if (data.json !== undefined) return JSON.parse(data.json) as unknown;
  if (data.bytes !== undefined) return Buffer.from(data.bytes);
  return data.int ?? data.double;
}
