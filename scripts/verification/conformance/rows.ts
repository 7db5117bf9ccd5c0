/**
 * A row of `conformance:host`: one behaviour docs/LOCAL-HOST.md claims, measured on the WebJobs SDK and on the local
 * host in the same scenario, and the verdict. A row that differs is a failure of the run unless it is one of the
 * known differences below, each listed in docs/LOCAL-HOST.md with its consequence.
 */

export type Verdict = "agree" | "known difference" | "differs" | "not measured";

export interface Row {
  /** Stable id, e.g. `queue.poison-ttl`. */
  id: string;
  /** What LOCAL-HOST.md claims. */
  claim: string;
  sdk: unknown;
  local: unknown;
  verdict: Verdict;
  /** Why the verdict: what was compared, or why it was not measured. */
  why: string;
}

/**
 * Rows where the local host differs from the SDK on purpose, with the consequence; docs/LOCAL-HOST.md lists each
 * ("Known gaps"). Empty when every measured row agrees.
 */
export const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {};

/** A measured row: agree when `agrees`, else a known difference or a failure. */
export function measuredRow(
  id: string,
  claim: string,
  sdk: unknown,
  local: unknown,
  agrees: boolean,
  why: string,
): Row {
  const known = KNOWN_DIFFERENCES[id];
  const verdict: Verdict = agrees ? "agree" : known === undefined ? "differs" : "known difference";
  return { id, claim, sdk, local, verdict, why: known === undefined || agrees ? why : `${why} — ${known}` };
}

/** A claim this harness cannot measure: the WebJobs SDK does not contain that part of the Functions host. */
export function notMeasuredRow(id: string, claim: string, why: string): Row {
  return { id, claim, sdk: null, local: null, verdict: "not measured", why };
}
