import { grantIdOf, grantedResultMessageSchema } from "../ports/messages.js";
import type { ReceivedMessage } from "../ports/ports.js";
import { endsById, recordEnds, takesEnd, type GrantEnd, type Ledger } from "../state/grantLedger.js";
import type { JobStore } from "../state/jobStore.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * The grants a batch's messages show ended: a granted unit's result (its report: when its last item started, how many
 * did), and anything else naming a grant — a result the leader cannot use, a poisoned work message, a worker's
 * rejection of one — which proves its copy ended too, at the latest when it was sent (so its rate permits are held a
 * window from now). Taken back from the ledger in one write before the batch's messages are acknowledged: a crash in
 * between leaves the messages to come back and end the grants again, which changes nothing. A message whose copy the
 * grant does not name (forged, or of a grant given back already) changes nothing either: grant ids are random.
 */
export class GrantEnds {
  private pending: GrantEnd[] = [];

  /** Notes the grant a message's text names, if any. */
  add(message: Pick<ReceivedMessage, "text">): void {
    const text = message.text;
    if (text === undefined || !text.includes('"grant"')) return;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return;
    }
    const report = grantedResultMessageSchema.safeParse(json);
    if (report.success) {
      const { id, lastStartAgoMs, starts, held } = report.data.grant;
      this.pending.push({
        id,
        starts,
        ...(lastStartAgoMs === undefined ? {} : { lastStartAgoMs }),
        ...(held === true ? { held } : {}),
      });
      return;
    }
    const id = grantIdOf(json) ?? grantIdOf(originalOf(json));
    if (id !== undefined) this.pending.push({ id, lastStartAgoMs: 0 });
  }

  /**
   * Records the ends noted so far in the ledger (one write) and returns the ledger; undefined, reading nothing, when
   * none was noted (results of jobs without limits cost the ledger nothing).
   */
  async flush(jobs: JobStore, nowMs: number, options: Abortable): Promise<Ledger | undefined> {
    const ends = this.pending;
    this.pending = [];
    if (ends.length === 0) return undefined;
    return jobs.ledger.update((ledger) => {
      const byId = endsById(ends);
      return ledger.grants.some((grant) => {
        const end = byId.get(grant.id);
        return end !== undefined && takesEnd(grant, end);
      })
        ? recordEnds(ledger, ends, nowMs, jobs.epoch)
        : undefined;
    }, options);
  }
}

/** A poison rejection's original message (`{ rejected, original }`), parsed, when it has one. */
function originalOf(json: unknown): unknown {
  if (typeof json !== "object" || json === null || !("original" in json) || typeof json.original !== "string")
    return undefined;
  try {
    return JSON.parse(json.original);
  } catch {
    return undefined;
  }
}
