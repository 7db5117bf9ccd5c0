import { describe, expect, it } from "vitest";
import type { ProxiedRequest } from "../../scripts/support/countingProxy";
import { measureLock } from "../../scripts/verification/conformance/lockMeasure";
import { measuredRow, notMeasuredRow } from "../../scripts/verification/conformance/rows";
import { dailyAt, isInvocationTime, statusRequests } from "../../scripts/verification/conformance/timerStatus";
import type { RunningHost } from "../../scripts/verification/conformance/world";
import { proxiedRequest } from "../support/proxiedRequest";

/** The parts of `conformance:host` its verdicts rest on, without hosts or storage. */

const request = (atMs: number, over: Partial<ProxiedRequest>): ProxiedRequest =>
  proxiedRequest("blob", { atMs, name: "azure-webjobs-hosts", ...over });

const hostWith = (requests: ProxiedRequest[]): RunningHost => ({ requests: () => requests }) as unknown as RunningHost;

describe("conformance:host's verdicts", () => {
  it("a row agrees, differs (failing the run), or is not measured, with both measurements kept", () => {
    expect(measuredRow("x.y", "claim", 1, 1, true, "equal")).toMatchObject({ verdict: "agree", sdk: 1, local: 1 });
    expect(measuredRow("x.y", "claim", 1, 2, false, "equal")).toMatchObject({ verdict: "differs", why: "equal" });
    expect(notMeasuredRow("x.z", "claim", "not in the SDK")).toMatchObject({ verdict: "not measured", sdk: null });
  });

  it("reads a host's lock use from its requests: the renewals, the other's polls grouped by pauses, one poll's requests", () => {
    const target = "azure-webjobs-hosts/locks/app/Host.Functions.Tick.Listener";
    const lease = (atMs: number, leaseAction: string, status: number): ProxiedRequest =>
      request(atMs, { method: "PUT", comp: "lease", target, leaseAction, status, leaseDurationS: 15 });
    const head = (atMs: number, status: number): ProxiedRequest => request(atMs, { method: "HEAD", target, status });
    const holder = hostWith([lease(0, "acquire", 201), lease(7_500, "renew", 200), lease(15_100, "renew", 200)]);
    const other = hostWith([
      head(10, 404),
      lease(20, "acquire", 404),
      request(30, { method: "PUT", target, status: 201 }),
      lease(40, "acquire", 409),
      head(15_000, 200),
      head(30_050, 200),
      head(45_000, 200),
    ]);
    expect(measureLock(holder, other, target, 40_000, 15)).toEqual({
      target,
      acquireDurationS: [15],
      renewGapsS: [7.6],
      pollGapsS: [15, 15.1],
      pollRequests: ["HEAD 200"],
    });
  });

  it("counts a container create toward the status only when the status blob's request follows it", () => {
    const status = "azure-webjobs-hosts/timers/app/Host.Functions.Tick/status";
    const container = (atMs: number, code: number): ProxiedRequest =>
      request(atMs, { method: "PUT", target: "azure-webjobs-hosts", status: code });
    const lockBlob = request(2, {
      method: "PUT",
      target: "azure-webjobs-hosts/locks/app/Host.Functions.Tick.Listener",
    });
    const requests = [
      container(1, 201),
      lockBlob,
      request(3, { target: status, status: 404 }),
      container(4, 409),
      request(5, { method: "PUT", target: status, status: 201 }),
    ];
    expect(statusRequests(requests, "app", "Tick")).toEqual(["GET 404", "PUT container 409", "PUT 201"]);
  });

  it("takes a status's Last for an invocation a few seconds before it, never after it; a daily schedule at an instant", () => {
    expect(isInvocationTime(10_000, 12_000)).toBe(true);
    expect(isInvocationTime(10_000, 9_000)).toBe(false);
    expect(isInvocationTime(1_000, 12_000)).toBe(false);
    expect(isInvocationTime(2_500, 12_000)).toBe(true);
    expect(dailyAt(Date.parse("2026-05-01T03:04:05Z"))).toBe("5 4 3 * * *");
  });
});
