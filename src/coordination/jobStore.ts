import type { FencedStateStore, Versioned } from "../fencing/FencedStateStore";
import type { PortOptions } from "./ports";
import { jobIndexSchema, jobStateSchema, keys, type JobIndex, type JobState } from "./jobState";

/** Typed reads and writes of the job index and job states through the fenced store. */
export class JobStore {
  constructor(private readonly fenced: FencedStateStore) {}

  readIndex(options: PortOptions = {}): Promise<Versioned<JobIndex> | undefined> {
    return this.fenced.read(keys.index, (value) => jobIndexSchema.parse(value), options);
  }

  /** Adds or removes job ids in the index (read-modify-write with retry). */
  async updateIndex(change: { add?: string[]; remove?: string[] }, options: PortOptions = {}): Promise<void> {
    await this.fenced.update(
      keys.index,
      (value) => jobIndexSchema.parse(value),
      (current) => {
        const active = new Set(current?.active ?? []);
        for (const id of change.add ?? []) active.add(id);
        for (const id of change.remove ?? []) active.delete(id);
        const next = [...active];
        const unchanged = current !== undefined && next.length === current.active.length && next.every((id) => current.active.includes(id));
        return unchanged ? undefined : { v: 1 as const, active: next };
      },
      options,
    );
  }

  readJob(id: string, options: PortOptions = {}): Promise<Versioned<JobState> | undefined> {
    return this.fenced.read(keys.jobState(id), (value) => jobStateSchema.parse(value), options);
  }

  /** Writes a job state over the version read (or creates it). Throws StaleEpochError / ConcurrentUpdateError. */
  writeJob(state: JobState, previous: Versioned<JobState> | undefined, options: PortOptions = {}): Promise<Versioned<JobState>> {
    return this.fenced.write(keys.jobState(state.id), { ...state, lastEpoch: this.fenced.epoch }, previous, options);
  }
}
