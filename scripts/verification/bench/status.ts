import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname } from "node:path";
import {
  BaseRequestPolicy,
  type HttpOperationResponse,
  type RequestPolicy,
  type RequestPolicyFactory,
  type RequestPolicyOptions,
  type WebResource,
} from "@azure/storage-blob";
import { type CoordinatorApp } from "../../../src/app/context";
import { createRepoApp } from "../../support/repoKinds";
import { readStatusView } from "../../../src/app/statusView";
import { JobStore } from "../../../src/coordination/state/jobStore";
import { keys } from "../../../src/coordination/state/jobState";
import { readJobStatus } from "../../../src/coordination/jobs/status";
import { readTermHistory } from "../../../src/coordination/state/termHistory";
import { FencedStateStore } from "../../../src/library/fencing/FencedStateStore";
import { describeLeader } from "../../../src/library/leadership/leaderInfo";
import { maxSizeJob } from "../../../test/support/maxSizeJobs";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";

/**
 * `npm run bench:status` (issue 21, item 2): what one refresh of the status page costs the instance that serves it,
 * with 25 active and 10 recently ended jobs of the documented maximum size (1,000,000 items, 200,000 groups: ~7.8 MiB
 * of JSON each) on an embedded Azurite — the page as it reads now (each job's summary, from the state blob's metadata)
 * against what it read before (each job's whole document), alternating, in one run. Bytes are counted by a request
 * policy in the SDK's pipeline (response headers and bodies); CPU is this process's user + system time around the
 * read (Azurite runs in a process of its own, not counted).
 */

const USAGE = `Usage: npm run bench:status -- [--rounds 3] [--active 25] [--recent 10] [--out FILE]

Times one refresh of the status page (readStatusView) against reading every listed job's whole document, as the page
did before issue 21, on an embedded Azurite with jobs of the maximum size.

Options:
  --rounds N   refreshes of each kind, alternating; the median is reported (default 3)
  --active N   active jobs listed (default 25, the page's maximum)
  --recent N   recently ended jobs listed (default 10, the index's)
  --out FILE   where to write the JSON report (default bench-results/status.json)`;

/** Counts the bytes of every response: its headers and, but for HEAD requests, its body. */
class ResponseBytes {
  bytes = 0;
  readonly policy: RequestPolicyFactory = {
    create: (next: RequestPolicy, options: RequestPolicyOptions) => new CountingPolicy(next, options, this),
  };
}

class CountingPolicy extends BaseRequestPolicy {
  constructor(
    next: RequestPolicy,
    options: RequestPolicyOptions,
    private readonly counter: ResponseBytes,
  ) {
    super(next, options);
  }

  override async sendRequest(request: WebResource): Promise<HttpOperationResponse> {
    const response = await this._nextPolicy.sendRequest(request);
    let bytes = 0;
    for (const header of response.headers.headersArray()) bytes += header.name.length + header.value.length + 4;
    if (request.method !== "HEAD") bytes += Number(response.headers.get("content-length") ?? 0);
    this.counter.bytes += bytes;
    return response;
  }
}

interface Measure {
  bytes: number;
  cpuMs: number;
  wallMs: number;
}

async function measure(counter: ResponseBytes, read: () => Promise<unknown>): Promise<Measure> {
  global.gc?.();
  const bytesBefore = counter.bytes;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await read();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { bytes: counter.bytes - bytesBefore, cpuMs: (used.user + used.system) / 1000, wallMs };
}

/**
 * What a refresh read before issue 21: the same parts, with every listed job's whole document. The documents are read
 * one after another here: read all at once, as the page did, 35 of them (273 MiB) made Azurite drop connections
 * (`socket hang up`). The CPU is the same either way.
 */
async function wholeDocumentRefresh(app: CoordinatorApp, ids: readonly string[]): Promise<unknown> {
  const parts = await Promise.all([
    describeLeader(app.leaseStore),
    readTermHistory(app.state),
    app.state.read(keys.index),
    app.system.list(keys.inboxPrefix, 10),
    app.workPoisonQueue.approximateCount(),
    app.resultsPoisonQueue.approximateCount(),
  ]);
  const jobs = [];
  for (const id of ids) jobs.push(await readJobStatus(app.state, app.system, app.registry, id));
  return [parts, jobs];
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function main(): Promise<void> {
  const values = parseFlags(process.argv.slice(2), {
    rounds: { type: "string" },
    active: { type: "string" },
    recent: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) {
    console.log(USAGE);
    return;
  }
  const rounds = numberFlag(values.rounds, "--rounds", { min: 1, max: 50 }) ?? 3;
  const activeCount = numberFlag(values.active, "--active", { min: 0, max: 25 }) ?? 25;
  const recentCount = numberFlag(values.recent, "--recent", { min: 0, max: 10 }) ?? 10;
  const out = pathFlag(values.out, "--out") ?? "bench-results/status.json";
  let azurite: Azurite | undefined;
  try {
    azurite = await startAzurite();
    const counter = new ResponseBytes();
    const app = createRepoApp({ COORDINATION_STORAGE: azurite.connectionString }, { policies: [counter.policy] });
    const jobs = new JobStore(new FencedStateStore(app.state, { epoch: 1, assertLeader: () => undefined }));
    const active = Array.from({ length: activeCount }, (_, n) => `active-${n}`);
    const recent = Array.from({ length: recentCount }, (_, n) => `recent-${n}`);
    console.log(`Writing ${active.length + recent.length} jobs of the maximum size to Azurite…`);
    for (const id of active) await jobs.writeJob(maxSizeJob(id), undefined);
    for (const id of recent)
      await jobs.writeJob(maxSizeJob(id, { status: "completed", completedAtMs: Date.now() }), undefined);
    await app.state.write(keys.index, { v: 1, active, recent }, 1, { ifNoneMatch: "*" });
    const documentBytes = (await app.state.readSummary(keys.jobState(active[0] ?? recent[0] ?? "")))?.bytes ?? 0;
    const now: Measure[] = [];
    const before: Measure[] = [];
    for (let round = 0; round < rounds; round++) {
      now.push(await measure(counter, () => readStatusView(app)));
      before.push(await measure(counter, () => wholeDocumentRefresh(app, [...active, ...recent])));
    }
    const load = loadavg().map((value) => value.toFixed(2));
    const summarize = (list: Measure[]) => ({
      bytes: median(list.map((m) => m.bytes)),
      cpuMs: Math.round(median(list.map((m) => m.cpuMs))),
      wallMs: Math.round(median(list.map((m) => m.wallMs))),
      rounds: list,
    });
    const report = {
      jobs: { active: active.length, recent: recent.length, documentBytes },
      now: summarize(now),
      before: summarize(before),
      machine: { cpus: availableParallelism(), loadAverage: load, node: process.version },
    };
    console.log(
      `\n${active.length} active + ${recent.length} recent jobs of ${(documentBytes / 2 ** 20).toFixed(1)} MiB each; ${rounds} refreshes of each kind, medians; load average ${load.join(" ")}\n`,
    );
    console.log("| Refresh | Bytes read | CPU | Wall |\n| --- | --- | --- | --- |");
    for (const [name, figures] of [
      ["summaries (now)", report.now],
      ["whole documents (before)", report.before],
    ] as const)
      console.log(
        `| ${name} | ${(figures.bytes / 1024).toFixed(0)} KiB | ${figures.cpuMs} ms | ${figures.wallMs} ms |`,
      );
    console.log(
      `\nbefore / now: ${(report.before.bytes / report.now.bytes).toFixed(0)}× the bytes, ${(report.before.cpuMs / Math.max(1, report.now.cpuMs)).toFixed(0)}× the CPU`,
    );
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`Wrote ${out}`);
  } finally {
    await azurite?.stop();
  }
}

main().catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`${error.message}\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  console.error(error);
  process.exitCode = 1;
});
