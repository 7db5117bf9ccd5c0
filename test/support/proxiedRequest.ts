import type { ProxiedRequest } from "../../scripts/support/countingProxy";

/** A counting proxy's record for tests of what reads them (bench:peer's pricing, conformance:host's rows). */
export function proxiedRequest(service: ProxiedRequest["service"], over: Partial<ProxiedRequest> = {}): ProxiedRequest {
  return {
    atMs: 0,
    service,
    method: "GET",
    name: "x",
    path: "",
    comp: "",
    status: 200,
    transactions: 1,
    target: "",
    ...over,
  };
}
