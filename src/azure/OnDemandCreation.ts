import type { Abortable } from "../library/util/delay";

/**
 * Creates a container or queue when a request finds it missing. Concurrent callers share the creation in flight, but
 * a finished one is forgotten: a failed creation is tried again by the next caller instead of being cached for ever,
 * and a container deleted after it was first created is created again.
 */
export class OnDemandCreation {
  private inFlight: Promise<unknown> | undefined;

  constructor(private readonly create: (options: Abortable) => Promise<unknown>) {}

  /** Creates it (idempotent: `createIfNotExists`), or joins the creation already in flight. */
  ensure(options: Abortable = {}): Promise<unknown> {
    if (this.inFlight === undefined) {
      const creation = this.create(options).finally(() => {
        if (this.inFlight === creation) this.inFlight = undefined;
      });
      this.inFlight = creation;
    }
    return this.inFlight;
  }
}
