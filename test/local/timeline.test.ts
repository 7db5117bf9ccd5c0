import { describe, expect, it } from "vitest";
import type { EventRecord } from "../../dev/src/local/eventLog";
import { renderTimeline } from "../../dev/src/local/timeline";

const T0 = Date.parse("2024-05-01T12:00:00.000Z");

function at(seconds: number, instance: string, type: string, fields: Record<string, unknown> = {}): EventRecord {
  return { ts: new Date(T0 + seconds * 1000).toISOString(), instance, pid: 100, type, ...fields };
}

describe("leadership timeline SVG", () => {
  const records: EventRecord[] = [
    at(0, "instance-1", "instance-started"),
    at(0, "instance-2", "instance-started"),
    at(0, "instance-3", "instance-started"),
    at(1, "instance-1", "lease-acquired", { epoch: 1 }),
    at(1.1, "instance-1", "step-started", { epoch: 1 }),
    at(3, "instance-1", "step-completed", { epoch: 1 }),
    at(3, "instance-2", "step-skipped", { leader: "instance-1" }),
    at(3.1, "instance-1", "lease-released", { epoch: 1 }),
    at(6, "instance-2", "lease-acquired", { epoch: 2 }),
    at(8, "instance-2", "lease-lost", { epoch: 2, reason: "renew-failed" }),
    at(8, "instance-2", "step-aborted", { epoch: 2, reason: "lease-lost", detail: "renewal <failed> & gave up" }),
    at(9, "instance-1", "lease-acquired", { epoch: 3 }),
    at(10, "instance-1", "instance-exited", { signal: "SIGKILL", killedByRunner: true }),
    at(30, "instance-3", "lease-acquired", { epoch: 4 }),
  ];
  const svg = renderTimeline(records, { title: "test run" });

  it("is a standalone SVG document with the title", () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
    expect(svg).toContain("test run");
  });

  it("draws one lane per instance, in natural order", () => {
    const lanes = [...svg.matchAll(/class="lane" data-instance="([^"]+)"/g)].map((match) => match[1]);
    expect(lanes).toEqual(["instance-1", "instance-2", "instance-3"]);
  });

  it("draws a bar per term, labelled with its epoch", () => {
    const epochs = [...svg.matchAll(/class="term" data-epoch="(\d+)"/g)].map((match) => Number(match[1]));
    expect(epochs.sort()).toEqual([1, 2, 3, 4]);
    for (const epoch of [1, 2, 3, 4]) expect(svg).toContain(`>e${epoch}</text>`);
    // The lost term is outlined in red; the term cut by the kill ends at the exit.
    expect(svg).toMatch(/instance-2 e2: 2\.0 s, lost/);
    expect(svg).toMatch(/instance-1 e3: 1\.0 s, exited/);
  });

  it("marks an aborted step in red, with its reason escaped", () => {
    const aborted = /<g class="step-aborted"><title>([^<]*)<\/title><line [^>]*stroke="#d62728"/.exec(svg);
    expect(aborted?.[1]).toBe("step aborted (epoch 2): lease-lost renewal &#60;failed&#62; &#38; gave up");
    expect(svg.match(/class="step"/g)).toHaveLength(1);
    expect(svg.match(/class="step-skipped"/g)).toHaveLength(1);
  });

  it("marks the killed instance", () => {
    expect(svg).toMatch(/<g class="killed"><title>instance-1 killed \(SIGKILL\)/);
  });

  it("copes with no events at all", () => {
    expect(renderTimeline([])).toContain("</svg>");
  });
});
