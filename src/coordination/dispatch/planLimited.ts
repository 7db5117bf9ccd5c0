import { MAX_KEYS_PER_UNIT, type PoolBook } from "../flow/grant.js";
import { keyPool, type JobFlow, type NamedPool } from "../flow/pools.js";
import type { ResendUnit } from "../flow/resend.js";
import type { ItemInput } from "../ports/messages.js";
import type { Hold } from "../state/grantLedger.js";
import type { ItemReader } from "./itemReader.js";

/** A unit of a limited job, planned with its shares: to be written down in the ledger, then sent. */
export interface PlannedUnit {
  first: number;
  inputs: ItemInput[];
  /** Each item's key (per-key limits), in item order; undefined without them. */
  keys: (string | undefined)[];
  /** Its shares: the pools every item counts against first, then one per distinct key, in order of first use. */
  holds: Hold[];
  /** The pools of its shares, in the same order. */
  pools: NamedPool[];
  /** Grants the unit had before this one, how many of them expired, and how many of its deliveries were lost. */
  regrants: number;
  expiries: number;
  lost: number;
}

/** What one pass may send of a limited job: its units, its items that cannot be sent, and what stopped it. */
export interface LimitedPlan {
  units: PlannedUnit[];
  failures: { item: number; reason: string }[];
  /** The job's cursor after the new units (and the failed items past it). */
  cursor: number;
  /** Units of the resend list that got a grant (by first item). */
  resent: Set<number>;
  /** Units of the resend list whose items cannot be read any more: their open items fail (by first item). */
  unreadable: Set<number>;
  /** The pool that had no share left for the next unit, if one stopped the plan. */
  blockedBy: string | undefined;
}

/** What a plan works within. */
export interface PlanLimits {
  /** Most new items (past the cursor) this pass may send. */
  newItems: number;
  /** Most units (grants) this pass may add. */
  units: number;
  /** Most items of one unit (the job's unit size). */
  unitItems: number;
  /** Most bytes of JSON a unit's inputs may take (its message's room, less the envelope and the grant's). */
  inputBytes: number;
  /** Items of a unit its worker runs at once. */
  perUnit: number;
}

/**
 * Plans a limited job's next units under the shares free in `book`: first the units it must send again (whole, as they
 * were: a unit keeps its items), then new ones from its cursor. A unit of new items is as large as its shares allow
 * ({@link PoolBook.itemCap}), holds at most {@link MAX_KEYS_PER_UNIT} distinct keys, and ends before an item whose key
 * has no share free; the job's items start in order, so when the next unit cannot start at all — a pool every item
 * counts against is used up, or the next item's key's is — the plan stops there (`blockedBy`), and the job waits
 * while other jobs go on. An item that cannot be sent (its input unreadable, its key not one) fails alone.
 */
export async function planLimitedUnits(
  flow: JobFlow,
  book: PoolBook,
  reader: ItemReader,
  job: { cursor: number; itemCount: number; resend: readonly ResendUnit[] },
  limits: PlanLimits,
): Promise<LimitedPlan> {
  const plan: LimitedPlan = {
    units: [],
    failures: [],
    cursor: job.cursor,
    resent: new Set(),
    unreadable: new Set(),
    blockedBy: undefined,
  };
  for (const unit of job.resend) {
    if (plan.units.length >= limits.units) return plan;
    const items = await readUnit(flow, reader, unit);
    if (!items.ok) {
      plan.unreadable.add(unit.first);
      continue;
    }
    const blocked = blockingPool(flow, book, items.keys);
    if (blocked !== undefined) return { ...plan, blockedBy: blocked };
    plan.units.push(
      grantUnit(
        flow,
        book,
        { first: unit.first, ...items, regrants: unit.regrants, expiries: unit.expiries ?? 0, lost: unit.lost ?? 0 },
        limits.perUnit,
      ),
    );
    plan.resent.add(unit.first);
  }
  let room = limits.newItems;
  while (room > 0 && plan.cursor < job.itemCount && plan.units.length < limits.units) {
    const blocked = blockingPool(flow, book, []);
    if (blocked !== undefined) return { ...plan, blockedBy: blocked };
    const end = Math.min(job.itemCount, plan.cursor + Math.min(room, limits.unitItems));
    const built = await buildUnit(flow, book, reader, plan, end, { ...limits, itemCount: job.itemCount });
    if (built === "blocked") return plan;
    if (built === undefined) continue; // an item failed alone
    plan.units.push(grantUnit(flow, book, { ...built, regrants: 0, expiries: 0, lost: 0 }, limits.perUnit));
    plan.cursor = built.first + built.inputs.length;
    room -= built.inputs.length;
  }
  return plan;
}

/** The pools every item counts against, then the pools of the keys given, in order of first use. */
function poolsOf(flow: JobFlow, keys: readonly (string | undefined)[]): NamedPool[] {
  const pools = [...flow.every];
  const { perKey } = flow;
  if (perKey === undefined) return pools;
  const seen = new Set<string>();
  for (const key of keys)
    if (key !== undefined && !seen.has(key)) {
      seen.add(key);
      pools.push({ id: keyPool(perKey.kind, key), limit: perKey.limit });
    }
  return pools;
}

/** The first pool (of those every item counts against, and of `keys`) with no share free; undefined when none. */
function blockingPool(flow: JobFlow, book: PoolBook, keys: readonly (string | undefined)[]): string | undefined {
  return poolsOf(flow, keys).find((pool) => !book.canStart(pool))?.id;
}

/** A unit's items and keys, read again (a unit sent again keeps its items). */
async function readUnit(
  flow: JobFlow,
  reader: ItemReader,
  unit: ResendUnit,
): Promise<{ ok: true; inputs: ItemInput[]; keys: (string | undefined)[] } | { ok: false }> {
  const inputs: ItemInput[] = [];
  const keys: (string | undefined)[] = [];
  for (let item = unit.first; item < unit.first + unit.count; item++) {
    const read = await reader.at(item);
    if (!read.ok) return { ok: false };
    const key = flow.perKey?.keyOf(read.input, item);
    if (key !== undefined && !key.ok) return { ok: false };
    inputs.push(read.input);
    keys.push(key?.key);
  }
  return { ok: true, inputs, keys };
}

/**
 * The next unit of new items from the plan's cursor, before item `end`: "blocked" when its first item's key has no
 * share free (the plan stops); undefined when its first item cannot be sent (it fails alone, past the cursor).
 */
async function buildUnit(
  flow: JobFlow,
  book: PoolBook,
  reader: ItemReader,
  plan: LimitedPlan,
  end: number,
  limits: PlanLimits & { itemCount: number },
): Promise<{ first: number; inputs: ItemInput[]; keys: (string | undefined)[] } | "blocked" | undefined> {
  const { itemCount } = limits;
  const first = plan.cursor;
  const remaining = itemCount - first;
  const cap = Math.min(end - first, ...flow.every.map((pool) => book.itemCap(pool, limits.perUnit, remaining)));
  const inputs: ItemInput[] = [];
  const keys: (string | undefined)[] = [];
  const perKey = new Map<string, { items: number; cap: number }>();
  let bytes = 0;
  for (let item = first; item < first + cap; item++) {
    const read = await reader.at(item);
    const key = read.ok ? flow.perKey?.keyOf(read.input, item) : undefined;
    const problem = !read.ok ? read.reason : key !== undefined && !key.ok ? key.reason : undefined;
    if (problem !== undefined || !read.ok) {
      if (inputs.length > 0) break; // it ends the unit, and fails once the next one reaches it
      plan.failures.push({ item, reason: `not dispatched: ${problem ?? "unreadable"}` });
      plan.cursor = item + 1;
      return undefined;
    }
    if (inputs.length > 0 && bytes + read.bytes > limits.inputBytes) break;
    if (key?.ok === true && flow.perKey !== undefined) {
      const counted = perKey.get(key.key);
      if (counted === undefined) {
        const pool = { id: keyPool(flow.perKey.kind, key.key), limit: flow.perKey.limit };
        if (!book.canStart(pool)) {
          if (inputs.length === 0) {
            plan.blockedBy = pool.id;
            return "blocked";
          }
          break;
        }
        if (perKey.size >= MAX_KEYS_PER_UNIT) break;
        perKey.set(key.key, { items: 1, cap: book.itemCap(pool, limits.perUnit, remaining) });
      } else if (counted.items >= counted.cap) break;
      else counted.items++;
    }
    inputs.push(read.input);
    keys.push(key?.ok === true ? key.key : undefined);
    bytes += read.bytes;
  }
  return { first, inputs, keys };
}

/** The unit with its shares taken from the book. */
function grantUnit(
  flow: JobFlow,
  book: PoolBook,
  unit: Pick<PlannedUnit, "first" | "inputs" | "keys" | "regrants" | "expiries" | "lost">,
  perUnit: number,
): PlannedUnit {
  const counts = new Map<string, number>();
  for (const key of unit.keys) if (key !== undefined) counts.set(key, (counts.get(key) ?? 0) + 1);
  const pools = poolsOf(flow, unit.keys);
  const holds = pools.map((pool, index) => {
    const key = index < flow.every.length ? undefined : [...counts.keys()][index - flow.every.length];
    return book.take(pool, key === undefined ? unit.inputs.length : (counts.get(key) ?? 1), perUnit);
  });
  return { ...unit, holds, pools };
}
