import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FairShare, type Sized } from "../../src/coordination/scheduling/fairShare";

/**
 * The scheduler's promises (docs/contributing/flow-control.md, "Priority and fairness"), searched for counter-examples
 * over random jobs, keys, priorities, unit sizes and the room of each pass. A job of the plan sends whole units: what
 * it was given, rounded up to its unit (less when it has fewer items), and that difference is charged to its key
 * (`correct`).
 */

/** What a job really sends of `items` given: whole units of `unit` (the last may go past), at most what it has left. */
function sendWholeUnits(items: number, unit: number, left: number): number {
  return Math.min(left, Math.ceil(items / unit) * unit);
}

const QUANTUM = fc.integer({ min: 1, max: 50 });

describe("fair share of the dispatch window (property tests)", () => {
  it("strict priority: no item goes to a job while a job of a more urgent priority could still take one", () => {
    fc.assert(
      fc.property(
        QUANTUM,
        fc.array(
          fc.record({
            priority: fc.integer({ min: 1, max: 9 }),
            key: fc.integer({ min: 0, max: 4 }),
            capacity: fc.integer({ min: 0, max: 300 }),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 1, maxLength: 6 }),
        (quantum, jobs, rooms) => {
          const share = new FairShare(quantum);
          const candidates: Sized[] = jobs.map((job, index) => ({
            id: `j${index}`,
            priority: job.priority,
            fairness: `k${job.key}`,
            capacity: job.capacity,
          }));
          for (const room of rooms) {
            const plan = share.plan(candidates, room);
            const given = new Map(plan.map(({ id, items }) => [id, items]));
            const total = plan.reduce((sum, { items }) => sum + items, 0);
            // Work-conserving: the room is used up, or every job got all it could take.
            expect(total).toBe(
              Math.min(
                room,
                candidates.reduce((sum, job) => sum + job.capacity, 0),
              ),
            );
            for (const { id, items } of plan) {
              const job = candidates.find((candidate) => candidate.id === id);
              expect(items).toBeGreaterThan(0);
              expect(items).toBeLessThanOrEqual(job?.capacity ?? 0);
              for (const other of candidates)
                if (other.priority < (job?.priority ?? 0)) expect(given.get(other.id) ?? 0).toBe(other.capacity);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("fairness: two keys of one priority, both with items to send throughout, are served within quantum + largest unit of each other after every pass", () => {
    fc.assert(
      fc.property(
        QUANTUM,
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 2, maxLength: 6 }),
        fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 9 }),
        (quantum, units, rooms, priority) => {
          const share = new FairShare(quantum);
          const largest = Math.max(...units);
          const sent = units.map(() => 0);
          // One job a key, each with more items than the run can send (its window is never what stops it).
          const candidates: Sized[] = units.map((_, key) => ({
            id: `j${key}`,
            priority,
            fairness: `tenant-${key}`,
            capacity: 1_000_000,
          }));
          for (const room of rooms) {
            for (const { id, items } of share.plan(candidates, room)) {
              const key = Number(id.slice(1));
              const unit = units[key] ?? 1;
              const really = sendWholeUnits(items, unit, 1_000_000);
              share.correct(id, really - items);
              sent[key] = (sent[key] ?? 0) + really;
            }
            expect(Math.max(...sent) - Math.min(...sent)).toBeLessThan(quantum + largest);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a tenant that arrives with a few items is served within one round of the others, however many items they have", () => {
    fc.assert(
      fc.property(
        QUANTUM,
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 30 }),
        fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 10 }),
        fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 40 }),
        (quantum, busyKeys, unit, warmUp, rooms) => {
          const share = new FairShare(quantum);
          const busy: Sized[] = Array.from({ length: busyKeys }, (_, key) => ({
            id: `busy-${key}`,
            priority: 5,
            fairness: `big-${key}`,
            capacity: 1_000_000,
          }));
          for (const room of warmUp)
            for (const { id, items } of share.plan(busy, room))
              share.correct(id, sendWholeUnits(items, unit, 1_000_000) - items);
          // The newcomer, with fewer items than a quantum; the picks one at a time, as `plan` makes them, to see who
          // was given what before it.
          let left = Math.min(quantum, 5);
          let othersBefore = 0;
          for (const room of rooms) {
            if (left === 0) break;
            share.beginPass([...busy, { id: "small", priority: 5, fairness: "small-tenant" }]);
            let rest = room;
            for (let pick = share.next(); pick !== undefined && rest > 0 && left > 0; pick = share.next()) {
              const items = Math.min(pick.allowance, rest, pick.id === "small" ? left : rest);
              const really = pick.id === "small" ? items : sendWholeUnits(items, unit, 1_000_000);
              share.sent(pick.id, really);
              rest -= items;
              if (pick.id === "small") left -= really;
              else othersBefore += really;
            }
          }
          // Until the newcomer's turn, each busy key ends the turn it is in and starts at most one more: less than
          // 2 quanta and a unit each (a key's deficit stays within (−unit, quantum]). The newcomer's turn then serves
          // all its items, the others waiting, across passes if the room is small.
          expect(othersBefore).toBeLessThan(busyKeys * (2 * quantum + unit));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("round robin among one tenant's jobs: each of its jobs gets a turn before any gets a second", () => {
    const share = new FairShare(10);
    const jobs: Sized[] = ["a", "b", "c"].map((id) => ({ id, priority: 5, fairness: "t", capacity: 1000 }));
    const plan = share.plan(jobs, 30);
    expect(plan).toEqual([
      { id: "a", items: 10 },
      { id: "b", items: 10 },
      { id: "c", items: 10 },
    ]);
    // The next pass starts with the job after the last served.
    expect(share.plan(jobs, 10)).toEqual([{ id: "a", items: 10 }]);
  });

  it("a key that sent past its turn (a large unit) pays it back before it is served again", () => {
    const share = new FairShare(10);
    const jobs: Sized[] = [
      { id: "large-units", priority: 5, fairness: "a", capacity: 1000 },
      { id: "small-units", priority: 5, fairness: "b", capacity: 1000 },
    ];
    expect(share.plan(jobs, 20)).toEqual([
      { id: "large-units", items: 10 },
      { id: "small-units", items: 10 },
    ]);
    share.correct("large-units", 25); // its unit is 35 items: a owes 25
    // a's turns pay the debt back (−15, −5) while b is served; its third brings it to 5.
    expect(share.plan(jobs, 30)).toEqual([
      { id: "small-units", items: 25 },
      { id: "large-units", items: 5 },
    ]);
  });
});
