import type { FencedStateStore, Versioned } from "../fencing/FencedStateStore";
import type { PortOptions } from "./ports";
import { RECENT_JOBS_LIMIT, jobIndexSchema, jobStateSchema, keys, type JobIndex, type JobState } from "./jobState";

/** Typed reads and writes of the job index and job states through the fenced store. */
export class JobStore {
  constructor(private readonly fenced: FencedStateStore) {}

  readIndex(options: PortOptions = {}): Promise<Versioned<JobIndex> | undefined> {
    return this.fenced.read(keys.index, (value) => jobIndexSchema.parse(value), options);
  }

  /**
   * Adds job ids to the active list, or moves ended ones from it to the bounded recent list (read-modify-write with
   * retry, fenced like every write).
   */
  async updateIndex(change: { add?: string[]; remove?: string[] }, options: PortOptions = {}): Promise<void> {
    await this.fenced.update(
      keys.index,
      (value) => jobIndexSchema.parse(value),
      (current) => {
        const active = new Set(current?.active ?? []);
        const ended = (change.remove ?? []).filter((id) => active.delete(id));
        for (const id of change.add ?? []) active.add(id);
        if (current !== undefined && ended.length === 0 && active.size === current.active.length) return undefined;
        const recent = [...(current?.recent ?? []).filter((id) => !ended.includes(id)), ...ended].slice(-RECENT_JOBS_LIMIT);
        return { v: 1 as const, active: [...active], recent };
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
