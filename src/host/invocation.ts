import type { InvocationContext } from "@azure/functions";
import type { Sink } from "../app/context.js";
import { formatEventLine } from "../app/events.js";
import { getTelemetry } from "../app/telemetry/setupTelemetry.js";
import { azureSdkLogger, teeLogger } from "../library/util/azureLogger.js";

// What the handlers take from an invocation's context for the app: where it logs, and a queue message's delivery.

/**
 * Sends the library's logs and the app's structured events to the invocation's log (and so to Application Insights),
 * or, when the app exports OpenTelemetry (`src/app/telemetry/`), as records with attributes and as metrics; and to
 * `@azure/logger` (silent unless `AZURE_LOG_LEVEL` or `setLogLevel` enables it), as the Azure SDK clients log.
 */
export function sinkFor(context: InvocationContext): Sink {
  const { functionName, invocationId, traceContext } = context;
  const invocation = {
    functionName,
    invocationId,
    traceParent: traceContext?.traceParent,
    traceState: traceContext?.traceState,
  };
  return getTelemetry().instrument(contextSink(context), invocation);
}

function contextSink(context: InvocationContext): Sink {
  const contextLogger = {
    verbose: (message: string) => context.debug(message),
    info: (message: string) => context.info(message),
    warn: (message: string) => context.warn(message),
    error: (message: string) => context.error(message),
  };
  const logger = teeLogger(contextLogger, azureSdkLogger);
  return {
    logger,
    // Renewals are routine: logged at debug, which host.json's Information level keeps out of Application Insights.
    emit: (event) => {
      if (event.type === "lease-renewed") logger.verbose(formatEventLine(event));
      else logger.info(formatEventLine(event));
    },
  };
}

/** A queue message's id and delivery count, from the trigger metadata the host passes (strings or numbers). */
export function deliveryOf(context: InvocationContext): { id: string; dequeueCount: number } {
  const metadata = context.triggerMetadata ?? {};
  const dequeueCount =
    typeof metadata.dequeueCount === "number" ? metadata.dequeueCount : Number(metadata.dequeueCount ?? 1);
  const id = typeof metadata.id === "string" ? metadata.id : context.invocationId;
  return { id, dequeueCount: Number.isFinite(dequeueCount) ? dequeueCount : 1 };
}
