import type { LeadershipEvent } from "../../src/library/leadership/events";
import type { Logger } from "../../src/library/util/logger";

/** Collects leadership events and log lines for assertions. */
export class Recorder {
  readonly events: LeadershipEvent[] = [];
  readonly logs: { level: string; message: string }[] = [];
  readonly onEvent = (event: LeadershipEvent): void => {
    this.events.push(event);
  };
  readonly logger: Logger = {
    verbose: (message) => this.logs.push({ level: "verbose", message }),
    info: (message) => this.logs.push({ level: "info", message }),
    warn: (message) => this.logs.push({ level: "warn", message }),
    error: (message) => this.logs.push({ level: "error", message }),
  };

  /** Events of one type. */
  ofType<K extends LeadershipEvent["type"]>(type: K): Extract<LeadershipEvent, { type: K }>[] {
    return this.events.filter((event): event is Extract<LeadershipEvent, { type: K }> => event.type === type);
  }
}
