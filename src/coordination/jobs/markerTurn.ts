/**
 * Most markers (inbox, cancellation requests) one listing reads: one page of List Blobs, which answers at most 5,000
 * names a request — the same request, and the same bill, as listing 50.
 */
export const MARKERS_LISTED = 5000;

/**
 * Where a step's passes are in a list of markers: the last one a pass looked at. A step keeps one per list; undefined
 * until its first pass.
 */
export interface MarkerTurn {
  after: string | undefined;
}

/**
 * The markers a pass takes from a listing, at most `max`, in name order from just after the last one the step's pass
 * before looked at (round to the start), or in a step's first pass from the `epoch × max`th: so markers a leader keeps
 * where they are — a newer version's jobs, requests for jobs not registered yet, ones it cannot apply yet — do not
 * hold up the others, however many sort before them. Each marker is looked at within ⌈listed ÷ max⌉ passes, or steps.
 */
export function takeInTurn(names: readonly string[], max: number, turn: MarkerTurn, epoch: number): string[] {
  const sorted = [...names].sort();
  if (sorted.length === 0) return [];
  const { after } = turn;
  const next = after === undefined ? (epoch * max) % sorted.length : sorted.findIndex((name) => name > after);
  const from = Math.max(0, next);
  return [...sorted.slice(from), ...sorted.slice(0, from)].slice(0, max);
}
