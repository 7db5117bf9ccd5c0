/**
 * The small logger the library writes to (CONTRIBUTING.md, "Logs and events"). The Functions adapter forwards it to
 * `InvocationContext`, so library logs reach Application Insights; tests hand in a recording one.
 */
export interface Logger {
  /** Routine detail (a lost race, a renewal). */
  verbose(message: string, properties?: Record<string, unknown>): void;
  /** Something a person watching would want to see (a leadership change). */
  info(message: string, properties?: Record<string, unknown>): void;
  /** Degraded but handled (a failed renewal that will be retried). */
  warn(message: string, properties?: Record<string, unknown>): void;
  /** Failed. */
  error(message: string, properties?: Record<string, unknown>): void;
}

/** A logger that drops everything: the default when none is given. */
export const silentLogger: Logger = {
  verbose: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
