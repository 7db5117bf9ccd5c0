import { randomBytes } from "node:crypto";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { CoordinationDeps } from "../deps.js";
import { PoolBook, lifetimeMs, nextGrant, type GrantLoss } from "../flow/grant.js";
import { claimReported } from "../flow/claim.js";
import type { JobFlow } from "../flow/pools.js";
import { withResends, type ResendUnit } from "../flow/resend.js";
import { foldOutcomes } from "../fold/foldOutcomes.js";
import type { FoldCounts } from "../fold/foldReport.js";
import { MAX_WORK_MESSAGE_BYTES, type GrantedWorkMessage, type WorkGrant } from "../ports/messages.js";
import {
  MAX_GRANTS,
  expiredUnreported,
  liveGrants,
  markExpired,
  tidied,
  type Grant,
  type Ledger,
} from "../state/grantLedger.js";
import type { PoolLimit } from "../kinds/kindLimits.js";
import { keys, type JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import type { ChunkCache } from "./chunkCache.js";
import type { DispatchReport } from "./dispatch.js";
import { ItemReader } from "./itemReader.js";
import { unitLimits } from "./packUnits.js";
import { inFlightOf } from "../state/heldItems.js";
import { planLimitedUnits, type LimitedPlan, type PlannedUnit } from "./planLimited.js";

/** Bytes of a work message a unit's grant may take (its pools, with keys of up to 256 bytes, and its key runs). */
const GRANT_RESERVE_BYTES = 16 * 1024;
/** A pool's "waiting" note is written again at most this often while nothing else is written, in ms. */
const WAITING_NOTE_INTERVAL_MS = 10_000;

/**
 * Sends a limited job's next units (its kind has limits, or it has its own), each under a grant written down first:
 * the ledger gets the grants (a new leader then counts them), the job its cursor and resend list, and only then do the
 * units go out — a crash after the writes leaves units granted but never sent, whose grants expire and whose units
 * are then sent again; never a unit running that the ledger does not count. First it takes stock of the job's grants
 * that expired without a report (a unit never sent, or held by a process that died): their units are sent again.
 * Units go out whole and keep their items when sent again, so folding counts each item once, as for any job.
 */
export async function dispatchLimitedJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  flow: JobFlow,
  budget: number,
  options: Abortable & { chunks: ChunkCache },
): Promise<DispatchReport & { blockedBy?: string }> {
  const report: DispatchReport = { sent: 0, messages: 0, failed: 0 };
  const state = job.value;
  if (state.status !== "running" || flow.keysUnknown === true) return report;
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  const nowMs = deps.now();
  const ledger = await jobs.ledger.read(io);
  const expired = expiredUnreported(ledger, state.id, nowMs);
  const listed = new Set((state.resend ?? []).map((unit) => unit.first));
  const fromExpired = await Promise.all(
    expired
      .filter((grant) => !listed.has(grant.first))
      .map(async (grant) => ({
        ...nextGrant(grant, await expiryOf(deps, grant, io)),
        first: grant.first,
        count: grant.count,
      })),
  );
  // The units to send again: listed before, and those whose grant expired just now (as the resend list takes them).
  const resend = [...(state.resend ?? []), ...(withResends(state, fromExpired)?.resend.slice(listed.size) ?? [])];
  const kind = deps.registry.get(state.kind);
  const inFlight = inFlightOf(state);
  const limits = unitLimits(deps, state);
  const plan = await planLimitedUnits(
    flow,
    new PoolBook(ledger, nowMs, jobs.epoch),
    new ItemReader(deps, state, options.chunks, io),
    { cursor: state.dispatched, itemCount: state.itemCount, resend },
    {
      newItems: Math.max(0, Math.min(budget, deps.maxInFlight - inFlight)),
      units: Math.max(0, MAX_GRANTS - liveGrants(ledger, nowMs, jobs.epoch)),
      unitItems: limits.items,
      inputBytes: limits.bytes - GRANT_RESERVE_BYTES,
      perUnit: kind?.concurrency ?? deps.workUnitConcurrency,
    },
  );
  const messages = plan.units.map((unit) => workMessage(state, unit, nowMs, deps.grantLifetimeMs));
  const oversize = new Set(
    plan.units.filter((_, index) => Buffer.byteLength(messages[index]?.text ?? "") > MAX_WORK_MESSAGE_BYTES),
  );
  for (const unit of oversize)
    plan.failures.push(
      ...unit.inputs.map((_, offset) => ({
        item: unit.first + offset,
        reason: `not dispatched: its work message with its grant would be more than ${MAX_WORK_MESSAGE_BYTES} bytes of JSON; put large inputs in a blob`,
      })),
    );
  const sending = messages.filter((_, index) => !oversize.has(plan.units[index] as PlannedUnit));
  // An expired grant is marked ended only once its unit is on the job's resend list as stored, or granted again in
  // this very write: a crash between the two writes must not lose the unit.
  const settled = expired.filter((grant) => listed.has(grant.first) || plan.resent.has(grant.first));
  const limitsOf = new Map(
    [...flow.every, ...plan.units.flatMap((unit) => unit.pools)].map((pool) => [pool.id, pool.limit]),
  );
  const grants = sending.map(({ grant }) => grant);
  await writeLedger(jobs, { grants, expired: settled, limitsOf }, plan.blockedBy, state, nowMs, io);
  report.failed = await writeJob(deps, jobs, job, plan, fromExpired, io);
  if (sending.length > 0)
    await deps.workQueue.send(
      sending.map(({ text }) => text),
      io,
    );
  report.messages = sending.length;
  report.sent = sending.reduce((sum, { grant }) => sum + grant.count, 0);
  return { ...report, ...(plan.blockedBy === undefined ? {} : { blockedBy: plan.blockedBy }) };
}

/** A planned unit's work message and the ledger's record of its grant. */
function workMessage(
  state: JobState,
  unit: PlannedUnit,
  nowMs: number,
  firstGrantMs: number | undefined,
): { text: string; grant: Grant } {
  const id = randomBytes(12).toString("base64url");
  const expiresAtMs = nowMs + lifetimeMs(unit.expiries, firstGrantMs);
  const every = unit.holds.length - new Set(unit.keys.filter((key) => key !== undefined)).size;
  const pools: WorkGrant["pools"] = unit.holds.map((hold) => ({
    id: hold.pool,
    ...(hold.c === undefined ? {} : { c: hold.c }),
    ...(hold.r === undefined ? {} : { r: hold.r, w: hold.windowMs ?? 0 }),
  }));
  const message: GrantedWorkMessage = {
    v: 3,
    jobId: state.id,
    first: unit.first,
    kind: state.kind,
    params: state.params,
    inputs: unit.inputs,
    grant: {
      id,
      expiresAtMs,
      pools,
      every: Array.from({ length: every }, (_, index) => index),
      ...(unit.keys.some((key) => key !== undefined) ? { keys: keyRuns(unit.keys, every) } : {}),
    },
  };
  const grant: Grant = {
    id,
    jobId: state.id,
    first: unit.first,
    count: unit.inputs.length,
    grantedAtMs: nowMs,
    expiresAtMs,
    holds: unit.holds,
    ...(unit.regrants > 0 ? { regrants: unit.regrants } : {}),
    ...(unit.expiries > 0 ? { expiries: unit.expiries } : {}),
    ...(unit.lost > 0 ? { lost: unit.lost } : {}),
  };
  return { text: JSON.stringify(message), grant };
}

/** Each item's key pool as runs `[pool index, items]` (key pools follow the `every` pools, in order of first use). */
function keyRuns(keys: readonly (string | undefined)[], every: number): [number, number][] {
  const index = new Map<string, number>();
  const runs: [number, number][] = [];
  for (const key of keys) {
    let pool = -1;
    if (key !== undefined) {
      if (!index.has(key)) index.set(key, every + index.size);
      pool = index.get(key) ?? -1;
    }
    const last = runs.at(-1);
    if (last !== undefined && last[0] === pool) last[1]++;
    else runs.push([pool, 1]);
  }
  return runs;
}

/**
 * The ledger with the new grants, the job's expired ones marked ended, and — when a pool stopped the job and no note
 * of it is recent — how many of its items wait: one write, or none when nothing changed.
 */
async function writeLedger(
  jobs: JobStore,
  change: { grants: readonly Grant[]; expired: readonly Grant[]; limitsOf: ReadonlyMap<string, PoolLimit> },
  blockedBy: string | undefined,
  state: JobState,
  nowMs: number,
  io: Abortable,
): Promise<void> {
  const { grants, expired, limitsOf } = change;
  await jobs.ledger.update((ledger: Ledger) => {
    const noted = blockedBy === undefined ? undefined : ledger.waiting[blockedBy];
    const stale = noted === undefined || nowMs - noted.atMs >= WAITING_NOTE_INTERVAL_MS;
    const waitingPool = stale ? blockedBy : undefined;
    if (grants.length === 0 && expired.length === 0 && waitingPool === undefined) return undefined;
    const marked =
      expired.length === 0 ? ledger : markExpired(ledger, new Set(expired.map((grant) => grant.id)), nowMs, jobs.epoch);
    const waiting = { ...marked.waiting };
    if (waitingPool !== undefined)
      waiting[waitingPool] = { atMs: nowMs, items: state.itemCount - state.dispatched + (state.resend?.length ?? 0) };
    const limits = { ...marked.limits };
    for (const pool of [...grants.flatMap((grant) => grant.holds.map((hold) => hold.pool)), ...Object.keys(waiting)]) {
      const limit = limitsOf.get(pool);
      if (limit !== undefined) limits[pool] = limit;
    }
    return tidied({ ...marked, grants: [...marked.grants, ...grants], waiting, limits }, nowMs);
  }, io);
}

/**
 * The job with its cursor past the new units, its resend list less the units granted again (and with the expired
 * units not granted yet), and the items that cannot be sent failed: one fenced write, or none when nothing changed.
 * Returns how many items it failed.
 */
async function writeJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  plan: LimitedPlan,
  fromExpired: readonly ResendUnit[],
  io: Abortable,
): Promise<number> {
  const attempt: { counts: FoldCounts } = { counts: { folded: 0, duplicates: 0, failed: 0 } };
  await jobs.updateJob(
    job.value.id,
    (current) => {
      attempt.counts = { folded: 0, duplicates: 0, failed: 0 };
      const added = withResends(current, fromExpired);
      const listed = added?.resend ?? current.resend ?? [];
      const resend = listed.filter((unit) => !plan.resent.has(unit.first) && !plan.unreadable.has(unit.first));
      const unreadable = listed.filter((unit) => plan.unreadable.has(unit.first));
      const failures = [
        ...plan.failures,
        ...(added?.failed ?? []),
        ...unreadable.flatMap((unit) =>
          Array.from({ length: unit.count }, (_, offset) => ({
            item: unit.first + offset,
            reason: "not dispatched again: its input can no longer be read",
          })),
        ),
      ];
      const advanced: JobState = { ...current, dispatched: Math.max(current.dispatched, plan.cursor), resend };
      if (resend.length === 0) delete advanced.resend;
      const next =
        failures.length > 0
          ? (foldOutcomes(deps, advanced, [{ done: [], failed: failures }], attempt.counts) ?? advanced)
          : advanced;
      const unchanged =
        next.dispatched === current.dispatched &&
        JSON.stringify(next.resend ?? []) === JSON.stringify(current.resend ?? []) &&
        failures.length === 0;
      return unchanged ? undefined : next;
    },
    io,
    job,
  );
  return attempt.counts.failed;
}

/**
 * How a grant that expired unreported ended: `expired` (its next grant lasts longer) unless its claim says its copy
 * sent its report — a result the leader could not read (damaged on its way) is a lost report, not a slow unit, and
 * must not double the next grant's lifetime. One read per expired grant.
 */
async function expiryOf(
  deps: Pick<CoordinationDeps, "system">,
  grant: Pick<Grant, "jobId" | "id">,
  io: Abortable,
): Promise<GrantLoss> {
  const claim = await deps.system.readText(keys.grantClaim(grant.jobId, grant.id), io);
  return claimReported(claim) ? "given back" : "expired";
}
