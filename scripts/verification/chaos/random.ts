/** A seeded PRNG, so a chaos run is repeatable: the same `--seed` picks the same timings, victims and duplicates. */

/** A source of numbers in [0, 1) with helpers; deterministic for a seed (mulberry32). */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** The next number in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  }

  /** A whole number in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One element of a non-empty list. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick() needs a non-empty list.");
    return item;
  }

  /** A new generator derived from this one (each scenario gets its own stream, independent of the others' use). */
  fork(salt: number): SeededRandom {
    return new SeededRandom(Math.floor(this.next() * 4_294_967_296) ^ salt);
  }
}
