import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname } from "node:path";
import { readSettings } from "../../../src/app/settings";
import { forEachCsvRecordByLibrary } from "../../../src/groupBy/csvRecords";
import { groupByView, groupRecords, mergeGroups, type GroupByPartial } from "../../../src/groupBy/groupBy";
import { processWorkMessage } from "../../../src/coordination/worker/worker";
import { world } from "../../../test/support/coordinationWorld";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";
import { baselineUnitResult } from "./throughput/baselineUnit";
import { median } from "./throughput/report";
import { scenarioJob } from "./throughput/scenarios";
import { appUnitItems, packUnits } from "./throughput/units";

/**
 * `npm run bench:unit`: the CPU a worker spends on the benchmark's small items (about 91 bytes of CSV each), in one
 * process, with no storage — what `bench:throughput` cannot separate from the host, the leader and Azurite on a shared
 * machine. Each round times, side by side and in alternating order: (1) the app's worker (`processWorkMessage`, on
 * in-memory ports) against the batched loop's code for the same unit messages (./throughput/baselineUnit.ts): the
 * worker's own cost per item beyond the task kind's; (2) the group-by kind reading the same items before issue 24's
 * CSV change (`csv-parse` set up for every item, a BigInt per record) and now. Pure CPU: every figure is time the
 * event loop is held.
 */

const USAGE = `Usage: npm run bench:unit -- [--items 20000] [--rounds 7] [--out FILE]

Times, in one process with no storage, the app's worker against the batched loop's code on the same unit messages of
small CSV items, and the group-by kind's reading of those items before and after issue 24's CSV change.

Options:
  --items N    small items, 1000–200000 (default 20000, bench:throughput's small scenario)
  --rounds N   rounds; each figure is the median (default 7)
  --out FILE   where to write the JSON report (default bench-results/unit.json)`;

interface Args {
  items: number;
  rounds: number;
  out: string;
}

function parse(argv: string[]): Args | undefined {
  const values = parseFlags(argv, {
    items: { type: "string" },
    rounds: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return undefined;
  return {
    items: numberFlag(values.items, "--items", { min: 1000, max: 200_000 }) ?? 20_000,
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 50 }) ?? 7,
    out: pathFlag(values.out, "--out") ?? "bench-results/unit.json",
  };
}

/**
 * Group-by's reading of one item before issue 24's CSV change (src/groupBy/groupBy.ts at 728f00e): `csv-parse`
 * for every input and a BigInt sum per record. Only the happy path: the benchmark's items are valid.
 */
function previousGroupRecords(text: string, keyField: string, valueField: string): GroupByPartial {
  const groups = new Map<string, [number, bigint, number, number]>();
  forEachCsvRecordByLibrary(text, keyField, valueField, (_record, key, raw) => {
    const value = Number(raw);
    const name = String(key);
    const micros = BigInt(Math.round(value * 1e6));
    const current = groups.get(name);
    groups.set(
      name,
      current
        ? [current[0] + 1, current[1] + micros, Math.min(current[2], value), Math.max(current[3], value)]
        : [1, micros, value, value],
    );
  });
  return [...groups]
    .map(([key, [count, sum, min, max]]): GroupByPartial[number] => [key, count, sum.toString(), min, max])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

async function timeMs(run: () => Promise<void> | void): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

const round1 = (value: number): number => Math.round(value * 10) / 10;
const round2 = (value: number): number => Math.round(value * 100) / 100;

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  if (args === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const job = scenarioJob("small", args.items, "bench/unit");
  const settings = readSettings({});
  const base = { jobId: "bench-unit", kind: job.kind, params: job.params };
  const units = packUnits(
    job.items,
    { maxItems: appUnitItems(settings, job.items), maxBytes: settings.WORK_UNIT_MAX_BYTES },
    Buffer.byteLength(JSON.stringify({ v: 2, ...base, first: job.items.length, inputs: [] })),
  );
  const bodies = units.map((unit) => JSON.stringify({ v: 2, ...base, first: unit.first, inputs: unit.inputs }));
  const texts = job.items.map((item) => ("inline" in item ? item.inline : ""));
  const { keyField, valueField } = job.params;
  const expected = JSON.stringify(job.expected);
  const check = (name: string, aggregate: GroupByPartial): void => {
    const view = Object.fromEntries(
      Object.entries(groupByView(aggregate)).map(([key, stats]) => [key, { ...stats, sum: round2(stats.sum) }]),
    );
    if (JSON.stringify(view) !== expected) throw new Error(`${name}: the aggregate differs from the expected one`);
  };

  const { deps, results } = world({ workUnitConcurrency: settings.WORK_UNIT_CONCURRENCY });
  const delivery = { id: "bench", dequeueCount: 1, maxDequeueCount: 5 };
  const implementations: Record<string, () => Promise<void> | void> = {
    worker: async () => {
      for (const body of bodies) await processWorkMessage(deps, JSON.parse(body) as unknown, delivery);
      const received = await results.receive(bodies.length, 60);
      let aggregate: GroupByPartial = [];
      for (const message of received) {
        aggregate = mergeGroups(aggregate, (JSON.parse(message.text ?? "{}") as { partial: GroupByPartial }).partial);
        await results.delete(message);
      }
      check("worker", aggregate);
    },
    loop: async () => {
      let aggregate: GroupByPartial = [];
      for (const body of bodies) {
        const result = await baselineUnitResult(body, (input) => ("inline" in input ? input.inline : ""));
        aggregate = mergeGroups(aggregate, JSON.parse(JSON.stringify(result.partial)) as GroupByPartial);
      }
      check("loop", aggregate);
    },
    kindBefore: () => {
      let aggregate: GroupByPartial = [];
      for (const text of texts) aggregate = mergeGroups(aggregate, previousGroupRecords(text, keyField, valueField));
      check("kind before", aggregate);
    },
    kindNow: () => {
      let aggregate: GroupByPartial = [];
      for (const text of texts) aggregate = mergeGroups(aggregate, groupRecords(text, job.params));
      check("kind now", aggregate);
    },
  };
  const names = Object.keys(implementations);
  const times: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  // A warm-up round (not counted) so every implementation is compiled before it is timed.
  for (const name of names) await implementations[name]?.();
  for (let round = 0; round < args.rounds; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    for (const name of order) times[name]?.push(await timeMs(() => implementations[name]?.()));
  }
  const medianMs = (name: string): number => median(times[name] ?? []) ?? 0;
  const perItemUs = (name: string): number => round2((medianMs(name) * 1000) / args.items);
  const ratio = (a: string, b: string): number => round2(medianMs(a) / medianMs(b));
  const report = {
    benchmark: "unit",
    node: process.version,
    machine: { cpus: availableParallelism(), loadAverage1m: round1(loadavg()[0] ?? 0) },
    items: args.items,
    meanItemBytes: round1(texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) / texts.length),
    units: units.length,
    itemsPerUnit: units[0]?.inputs.length,
    rounds: args.rounds,
    medianOf: "rounds",
    perItemUs: Object.fromEntries(names.map((name) => [name, perItemUs(name)])),
    workerOverLoop: ratio("worker", "loop"),
    kindBeforeOverNow: ratio("kindBefore", "kindNow"),
    roundsMs: Object.fromEntries(names.map((name) => [name, (times[name] ?? []).map(round1)])),
  };
  process.stdout.write(
    [
      `${args.items} small items (${report.meanItemBytes} bytes each) in ${units.length} units, ${args.rounds} rounds, medians:`,
      `  app's worker:        ${report.perItemUs.worker} µs per item`,
      `  batched loop:        ${report.perItemUs.loop} µs per item   (worker ÷ loop ${report.workerOverLoop}×)`,
      `  group-by kind, before issue 24's CSV change: ${report.perItemUs.kindBefore} µs per item`,
      `  group-by kind, now:                          ${report.perItemUs.kindNow} µs per item   (${report.kindBeforeOverNow}× faster)`,
      "",
    ].join("\n"),
  );
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(
    `Wrote ${args.out} (${report.machine.cpus} CPUs, load average ${report.machine.loadAverage1m} at the end)\n`,
  );
}

main().catch((error: unknown) => {
  if (!(error instanceof UsageError)) throw error;
  process.stderr.write(`${error.message}\n\n${USAGE}\n`);
  process.exitCode = 2;
});
