import type { InvocationContext } from "@azure/functions";
import type { Sink } from "../src/app/context";
import { formatEventLine } from "../src/app/events";

/** Sends the library's logs and the app's structured events to the invocation's log (and so to Application Insights). */
export function sinkFor(context: InvocationContext): Sink {
  return {
    logger: {
      verbose: (message) => context.debug(message),
      info: (message) => context.info(message),
      warn: (message) => context.warn(message),
      error: (message) => context.error(message),
    },
    // Renewals are routine: logged at debug, which host.json's Information level keeps out of Application Insights.
    emit: (event) => {
      if (event.type === "lease-renewed") context.debug(formatEventLine(event));
      else context.info(formatEventLine(event));
    },
  };
}
