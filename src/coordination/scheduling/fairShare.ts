/**
 * Which job the leader dispatches next (docs/contributing/flow-control.md, "Priority and fairness"), as pure logic:
 * strictly by priority (1 before 2, …), then among the jobs of the most urgent priority that can take items, by deficit
 * round robin over their fairness keys, counted in items (each key, on its turn, may send its deficit plus a quantum;
 * what it sends past that is taken from its next turn), then round robin among one key's jobs (one job a turn). A key
 * whose jobs all left is forgotten, deficit and all. Two keys of one priority that both have items to send throughout
 * are served within `quantum + largest unit` items of each other at every moment (`test/unit/fairShare.test.ts`).
 */

/** A job the pass may dispatch: its priority and its fairness key (`JobSchedule.fairness`). */
export interface Candidate {
  id: string;
  priority: number;
  fairness: string;
}

/** A candidate with what it can take in this pass: its items left to send, within its own window. */
export interface Sized extends Candidate {
  capacity: number;
}

/** The job to dispatch next, and the most items its key may send now (its deficit: at least 1). */
export interface Pick {
  id: string;
  allowance: number;
}

/** One fairness key of a priority: its deficit, whether its turn is on, its jobs in round-robin order. */
interface KeyState {
  deficit: number;
  inTurn: boolean;
  jobs: string[];
  /** Index of the job that goes next in `jobs`. */
  next: number;
}

/** The keys of one priority, in turn order, and whose turn it is. */
interface Level {
  keys: string[];
  /** Index in `keys` of the key whose turn it is (or comes next). */
  turn: number;
  states: Map<string, KeyState>;
}

/**
 * Deficit round robin over fairness keys within strict priorities, carried from one pass to the next of a step. Each
 * pass: {@link beginPass} with the jobs that may take items, then {@link next} and {@link sent} in turn while the pass
 * has room.
 */
export class FairShare {
  private readonly levels = new Map<number, Level>();
  /** Where each candidate of this pass is: its priority and key. */
  private readonly placed = new Map<string, { priority: number; key: string }>();
  /** Jobs that could send nothing more in this pass (their window full, or nothing left). */
  private readonly exhausted = new Set<string>();

  /** @param quantum items a key may send per turn: at least one whole unit of any job (WORK_UNIT_MAX_ITEMS). */
  constructor(private readonly quantum: number) {
    if (!Number.isInteger(quantum) || quantum < 1) throw new RangeError(`quantum is ${quantum}; it is at least 1`);
  }

  /**
   * Starts a pass with its candidates, in the order new keys and jobs join the rotation. Keys and jobs that are not
   * candidates any more leave it (a key's deficit with it); the others keep their place, deficit and turn.
   */
  beginPass(candidates: readonly Candidate[]): void {
    this.exhausted.clear();
    this.placed.clear();
    const byLevel = new Map<number, Map<string, string[]>>();
    for (const { id, priority, fairness } of candidates) {
      this.placed.set(id, { priority, key: fairness });
      const keys = byLevel.get(priority) ?? new Map<string, string[]>();
      byLevel.set(priority, keys);
      keys.set(fairness, [...(keys.get(fairness) ?? []), id]);
    }
    for (const priority of [...this.levels.keys()]) if (!byLevel.has(priority)) this.levels.delete(priority);
    for (const [priority, keys] of byLevel) this.levels.set(priority, rebuildLevel(this.levels.get(priority), keys));
  }

  /**
   * The pass's plan: how many items each candidate is given of `room`, in the order they first got some — the deficit
   * round robin played out over the candidates' capacities, so that each job is dispatched once a pass (one write of
   * its cursor) with all it was given. What a job then really sends differs by less than a unit (whole units, the
   * tail of a job): {@link correct} charges the difference to its key.
   */
  plan(candidates: readonly Sized[], room: number): { id: string; items: number }[] {
    this.beginPass(candidates);
    const left = new Map(candidates.map((candidate) => [candidate.id, candidate.capacity]));
    const given = new Map<string, number>();
    for (const { id, capacity } of candidates) if (capacity <= 0) this.exhausted.add(id);
    let rest = room;
    while (rest > 0) {
      const pick = this.next();
      if (pick === undefined) break;
      const capacity = left.get(pick.id) ?? 0;
      const items = Math.min(pick.allowance, capacity, rest);
      given.set(pick.id, (given.get(pick.id) ?? 0) + items);
      left.set(pick.id, capacity - items);
      rest -= items;
      this.sent(pick.id, items);
      if (capacity - items <= 0) this.exhausted.add(pick.id);
    }
    return [...given].map(([id, items]) => ({ id, items }));
  }

  /** Charges a job's key for what it sent beyond its plan (or credits it for what it did not send, when negative). */
  correct(id: string, items: number): void {
    const place = this.placed.get(id);
    const state = place === undefined ? undefined : this.levels.get(place.priority)?.states.get(place.key);
    if (state !== undefined) state.deficit -= items;
  }

  /** The next job to dispatch and how much its key may send; undefined when no candidate can take more this pass. */
  next(): Pick | undefined {
    for (const priority of [...this.levels.keys()].sort((a, b) => a - b)) {
      const level = this.levels.get(priority);
      if (level === undefined) continue;
      const pick = this.nextIn(level);
      if (pick !== undefined) return pick;
    }
    return undefined;
  }

  /**
   * What the picked job sent, in items. Its key's deficit goes down by as much (below zero when a unit went past it:
   * taken from its next turn); 0 means the job can send nothing more in this pass: it is passed over until the next.
   */
  sent(id: string, items: number): void {
    const place = this.placed.get(id);
    const level = place === undefined ? undefined : this.levels.get(place.priority);
    const state = place === undefined ? undefined : level?.states.get(place.key);
    if (level === undefined || state === undefined) return;
    if (items <= 0) {
      this.exhausted.add(id);
      return;
    }
    state.deficit -= items;
    state.next = (state.jobs.indexOf(id) + 1) % state.jobs.length;
    if (state.deficit <= 0) endTurn(level, state);
  }

  /**
   * The next pick of one priority: the key whose turn it is (its turn begun, with a quantum more, if not yet), its next
   * job that can send. A key none of whose jobs can send now is passed over, keeping its deficit; one still in debt
   * after its quantum (a unit larger than a quantum went past) spends its turn. Undefined when no job can send.
   */
  private nextIn(level: Level): Pick | undefined {
    // Each round of the keys adds a quantum to every key that can send, so this ends.
    for (;;) {
      let canSend = false;
      for (let looked = 0; looked < level.keys.length; looked++) {
        const key = level.keys[level.turn];
        const state = key === undefined ? undefined : level.states.get(key);
        const job = state === undefined ? undefined : this.nextJobOf(state);
        if (state === undefined || job === undefined) {
          level.turn = (level.turn + 1) % level.keys.length;
          continue;
        }
        canSend = true;
        if (!state.inTurn) {
          state.inTurn = true;
          state.deficit += this.quantum;
        }
        if (state.deficit > 0) return { id: job, allowance: state.deficit };
        endTurn(level, state);
      }
      if (!canSend) return undefined;
    }
  }

  /** The key's next job (round robin) that can still send in this pass. */
  private nextJobOf(state: KeyState): string | undefined {
    for (let offset = 0; offset < state.jobs.length; offset++) {
      const job = state.jobs[(state.next + offset) % state.jobs.length];
      if (job !== undefined && !this.exhausted.has(job)) return job;
    }
    return undefined;
  }
}

/** Ends a key's turn: the next key's comes. */
function endTurn(level: Level, state: KeyState): void {
  state.inTurn = false;
  level.turn = (level.turn + 1) % level.keys.length;
}

/**
 * A priority's keys for a new pass: the keys that stay, in their order, with the turn where it was (or with the first
 * staying key after one that left); new keys after them, in the order given, so a newcomer's first turn comes within
 * one round of the others'.
 */
function rebuildLevel(previous: Level | undefined, keys: ReadonlyMap<string, string[]>): Level {
  const order = previous?.keys.filter((key) => keys.has(key)) ?? [];
  let turnKey: string | undefined;
  for (let offset = 0; previous !== undefined && offset < previous.keys.length; offset++) {
    const key = previous.keys[(previous.turn + offset) % previous.keys.length];
    if (key !== undefined && keys.has(key)) {
      turnKey = key;
      break;
    }
  }
  const states = new Map<string, KeyState>();
  for (const key of order) {
    const state = previous?.states.get(key);
    const jobs = keys.get(key);
    if (state === undefined || jobs === undefined) continue;
    const current = state.jobs[state.next];
    state.jobs = [
      ...state.jobs.filter((job) => jobs.includes(job)),
      ...jobs.filter((job) => !state.jobs.includes(job)),
    ];
    state.next = current === undefined ? 0 : Math.max(0, state.jobs.indexOf(current));
    states.set(key, state);
  }
  for (const [key, jobs] of keys) {
    if (states.has(key)) continue;
    states.set(key, { deficit: 0, inTurn: false, jobs: [...jobs], next: 0 });
    order.push(key);
  }
  return { keys: order, turn: turnKey === undefined ? 0 : order.indexOf(turnKey), states };
}
