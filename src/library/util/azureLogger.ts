import { createClientLogger, type AzureLogger } from "@azure/logger";
import type { Logger } from "./logger.js";

/**
 * The library's logs through `@azure/logger`, as the Azure SDK clients log (CONTRIBUTING.md, "Logs and events"):
 * namespace `azure:azure-leader-coordinator:<level>`, silent unless `AZURE_LOG_LEVEL` (verbose, info, warning,
 * error) or `setLogLevel()` of `@azure/logger` enables a level, written where `AzureLogger.log` sends it (stderr by
 * default). Properties follow the message as JSON.
 */
export const azureSdkLogger: Logger = fromAzureLogger(createClientLogger("azure-leader-coordinator"));

/** A {@link Logger} over an `@azure/logger` client logger; nothing is formatted for a level that is off. */
export function fromAzureLogger(azure: AzureLogger): Logger {
  const at =
    (level: AzureLogger[keyof AzureLogger]) =>
    (message: string, properties?: Record<string, unknown>): void => {
      if (!level.enabled) return;
      level(properties === undefined ? message : `${message} ${JSON.stringify(properties)}`);
    };
  return { verbose: at(azure.verbose), info: at(azure.info), warn: at(azure.warning), error: at(azure.error) };
}

/** One logger writing to each of `loggers`, in order. */
export function teeLogger(...loggers: readonly Logger[]): Logger {
  return {
    verbose: (message, properties) => {
      for (const logger of loggers) logger.verbose(message, properties);
    },
    info: (message, properties) => {
      for (const logger of loggers) logger.info(message, properties);
    },
    warn: (message, properties) => {
      for (const logger of loggers) logger.warn(message, properties);
    },
    error: (message, properties) => {
      for (const logger of loggers) logger.error(message, properties);
    },
  };
}
