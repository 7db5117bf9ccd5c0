import { defineTaskKind, ItemError } from "azure-leader-coordinator";
import { z } from "zod";

/**
 * A kind that calls a partner's HTTP API once per item, held to the API's terms by the coordinator's limits: the
 * partner allows 10 requests at once and 50 a second across all callers, and 2 at once per account. Each item is
 * `<account>/<record>`; the lookup's answer is counted. However many instances run and however the host batches work
 * units, no more requests than that are in flight, or started in any second (the limits hold across every instance).
 *
 * The rate is declared with headroom (45, not 50): the coordinator counts an item when the kind is called, the API
 * counts a request when it arrives, and the time between varies (a busy event loop, a new connection). Concurrency
 * needs none: an item holds its share until its response has arrived.
 */

/** The job's params: the API's base URL. */
export const lookupParams = z.strictObject({ baseUrl: z.url() });

/** The account an item belongs to: the part of `<account>/<record>` before the slash. */
function accountOf(text: string | undefined): string {
  const account = text?.split("/", 1)[0] ?? "";
  return account === "" ? "(none)" : account;
}

export const lookupKind = defineTaskKind({
  name: "lookup",
  params: lookupParams,
  concurrency: 8, // items of one work unit at once: this kind waits on the network
  limits: {
    concurrency: 10,
    rate: { limit: 45, periodSeconds: 1 }, // the API allows 50: headroom for the time a request takes to arrive
    key: (item) => accountOf(item.text), // the leader computes it when it sends the item
    perKey: { concurrency: 2 },
  },
  async process(input, { params, idempotencyKey, abortSignal }) {
    const response = await fetch(new URL(`records/${encodeURIComponent(input.text)}`, params.baseUrl), {
      headers: { "idempotency-key": idempotencyKey },
      signal: abortSignal,
    });
    if (response.status === 404) throw new ItemError(`no record ${input.text}`);
    // Anything else unexpected (a 429 included) is transient: the host delivers the unit again.
    if (!response.ok) throw new Error(`the API answered ${response.status} for ${input.text}`);
    return 1;
  },
  aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
});
