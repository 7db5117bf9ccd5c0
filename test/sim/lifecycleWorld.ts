import { AbortError } from "../../src/library/errors";
import type { SimInstance, SimWorld } from "./world";

/**
 * What issue 37's lifecycle models do in the world (`lifecycle.ts`): hosts that shut down while a unit runs — the
 * appTerminate hook fires the process's shutdown signal, which reaches the running unit; the host stops taking
 * messages, waits for the function, and ends the process; a new one starts — aimed at a unit's last delivery. And what
 * the invariants read: the items each unit's last delivery processed, in a delivery that ended with the process alive.
 */
export class SimLifecycle {
  /** Shutdowns armed: each strikes the next unit on its last delivery to finish an item, or after `untilMs` any. */
  private readonly armed: { untilMs: number }[] = [];
  /** Per job, the items a unit's last delivery processed (its handler then returned or threw; the process lived). */
  readonly doneOnLastDelivery = new Map<string, Set<number>>();
  /** Shutdowns that struck: when, which process, and whether on a unit's last delivery. */
  readonly shutdowns: { atMs: number; process: string; lastDelivery: boolean }[] = [];

  constructor(private readonly world: SimWorld) {}

  /** Arms the plan's shutdowns at their times. */
  start(): void {
    for (const shutdown of this.world.plan.lifecycle.shutdowns)
      this.world.at(shutdown.atS * 1000, () => {
        this.armed.push({ untilMs: Date.now() + shutdown.forS * 1000 });
      });
  }

  /** A delivery on `instance` finished an item (`last`: on the unit's last delivery): a shutdown may strike now. */
  onItemDone(instance: SimInstance, last: boolean): void {
    const index = this.armed.findIndex((armed) => last || Date.now() >= armed.untilMs);
    if (index < 0 || instance.shutdown.signal.aborted || instance.process.crashed) return;
    this.armed.splice(index, 1);
    this.shutdowns.push({ atMs: Date.now(), process: instance.process.name, lastDelivery: last });
    instance.shutdown.abort(new AbortError("The app is shutting down (simulated deploy); running work stops."));
    // The host waits for the running function (a simulated item takes no virtual time), then ends the process.
    setTimeout(() => {
      this.world.killWorker(instance);
    }, 2000);
  }

  /** A unit's last delivery ended with the process alive, having processed `items` of job `jobId`. */
  onLastDeliveryEnded(jobId: string, items: readonly number[]): void {
    const done = this.doneOnLastDelivery.get(jobId) ?? new Set<number>();
    for (const item of items) done.add(item);
    this.doneOnLastDelivery.set(jobId, done);
  }
}
