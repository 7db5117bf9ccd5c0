/**
 * The library boundary (CONTRIBUTING.md, "Layout") is enforced by lint: each folder's rule refuses an import across
 * it and lets through what the layout allows. Runs ESLint with only the boundary rules, on source text placed at
 * paths inside each folder.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ESLint, type Linter } from "eslint";
import tseslint from "typescript-eslint";
import { beforeAll, describe, expect, it } from "vitest";

const root = resolve(__dirname, "../..");
let eslint: ESLint;

beforeAll(async () => {
  const { boundary } = (await import(pathToFileURL(resolve(root, "eslint.boundary.mjs")).href)) as {
    boundary: Linter.Config[];
  };
  eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ["**/*.ts"],
        languageOptions: { parser: tseslint.parser },
        plugins: { "@typescript-eslint": tseslint.plugin },
      },
      ...boundary,
    ],
  });
});

/** The import specifiers lint refuses in `code` placed at `file` (`typeOnly`: as `import type`). */
async function refused(file: string, imports: string[], typeOnly = false): Promise<string[]> {
  const code = imports
    .map(
      (spec, i) =>
        `import ${typeOnly ? "type " : ""}* as m${i} from "${spec}";\nexport ${typeOnly ? "type " : ""}{ m${i} };`,
    )
    .join("\n");
  const [result] = await eslint.lintText(code, { filePath: resolve(root, file) });
  const messages = result?.messages ?? [];
  for (const m of messages) expect(m.ruleId, m.message).toMatch(/^(@typescript-eslint\/)?no-restricted-imports$/);
  return messages.map((m) => imports[Math.floor((m.line - 1) / 2)] ?? `line ${m.line}`);
}

describe("the library boundary, enforced by lint", () => {
  it("nothing in src/ imports @azure/functions but src/host/, and that only its types (the user passes `app` in)", async () => {
    for (const file of ["src/app/x.ts", "src/library/x.ts", "src/azure/x.ts", "src/coordination/x.ts"]) {
      expect(await refused(file, ["@azure/functions"]), file).toEqual(["@azure/functions"]);
      expect(await refused(file, ["@azure/functions"], true), file).toEqual(["@azure/functions"]);
    }
    expect(await refused("src/host/x.ts", ["@azure/functions"])).toEqual(["@azure/functions"]);
    expect(await refused("src/host/x.ts", ["@azure/functions"], true)).toEqual([]);
  });

  it("the registration uses the app's operations, not the Azure adapters or an Azure SDK", async () => {
    const across = ["../azure/clients", "@azure/storage-queue"];
    const allowed = ["../app/operations", "../library/errors", "../coordination/kinds/taskKinds", "./triggers"];
    expect(await refused("src/host/x.ts", [...allowed, ...across])).toEqual(across);
  });

  it("this repo's Function app (functions/) uses only the package's public entry, as a user's app does", async () => {
    const across = ["../src/app/context", "../src/host/registerCoordinator", "../src/library/index", "../src/index.js"];
    const allowed = [
      "azure-leader-coordinator",
      "azure-leader-coordinator/leader-election",
      "@azure/functions",
      "./other",
    ];
    expect(await refused("functions/x.ts", [...allowed, ...across])).toEqual(across);
  });

  it("the library imports neither the app, the Azure adapters, the coordination logic nor an Azure SDK", async () => {
    const across = [
      "../../app/settings",
      "../../azure/StorageQueue",
      "../../coordination/ports/ports",
      "@azure/storage-blob",
      "@azure/identity",
    ];
    const within = ["../lease/LeaseStore", "../util/delay", "../errors", "./Term", "node:crypto"];
    expect(await refused("src/library/leadership/x.ts", [...across, ...within])).toEqual(across);
  });

  it("the library's API may export its Azure adapters, not the app or the coordination logic", async () => {
    expect(
      await refused("src/library/index.ts", [
        "../azure/BlobLeaseStore",
        "./leadership/LeaderElector",
        "../app/settings",
        "../coordination/step/step",
      ]),
    ).toEqual(["../app/settings", "../coordination/step/step"]);
  });

  it("the Azure adapters import the library and the coordination ports, nothing else of coordination, not the app", async () => {
    const allowed = [
      "../library/errors",
      "../coordination/ports/ports",
      "../coordination/ports/ports.js",
      "./storageErrors.js",
      "@azure/storage-queue",
    ];
    expect(await refused("src/azure/x.ts", [...allowed, "../coordination/state/jobState", "../app/settings"])).toEqual([
      "../coordination/state/jobState",
      "../app/settings",
    ]);
  });

  it("the coordination logic imports neither the app, the Azure adapters, a task kind nor an Azure SDK", async () => {
    const allowed = ["../ports/ports", "../jobs/cancel", "../../library/leadership/Term", "../../library/util/clock"];
    const across = ["../../app/settings", "../../azure/StorageQueue", "../../groupBy/groupBy", "@azure/storage-queue"];
    expect(await refused("src/coordination/step/x.ts", [...allowed, ...across])).toEqual(across);
    expect(await refused("src/coordination/fold/x.ts", ["../../groupBy/groupBy.js", "../../app/settings"])).toEqual([
      "../../groupBy/groupBy.js",
      "../../app/settings",
    ]);
  });

  it("the rooms of src/coordination/ import one another one way: the step runs them, none imports it or a room above", async () => {
    // Each room, what it may import of the others (all of them, with and without `.js`), and one it may not.
    const rooms: [room: string, allowed: string[], refusedOnes: string[]][] = [
      [
        "kinds",
        ["./taskRegistry.js", "../../library/errors.js"],
        ["../ports/ports.js", "../deps.js", "../step/step.js"],
      ],
      [
        "ports",
        ["./messages.js", "../../library/util/delay.js"],
        ["../state/jobState.js", "../kinds/taskKinds", "../deps"],
      ],
      [
        "state",
        ["../ports/messages.js", "./jobStatus.js"],
        ["../deps.js", "../kinds/taskRegistry.js", "../jobs/submit"],
      ],
      ["wake", ["../ports/ports.js", "./wake.js"], ["../deps.js", "../state/jobState.js", "../worker/worker.js"]],
      [
        "jobs",
        ["../deps.js", "../ports/ports.js", "../state/jobStore.js", "../kinds/taskRegistry.js", "./cancel.js"],
        [
          "../dispatch/dispatch.js",
          "../fold/foldReport.js",
          "../worker/worker",
          "../wake/wake.js",
          "../step/step.js",
          "../scheduling/fairShare.js",
        ],
      ],
      [
        "fold",
        ["../deps.js", "../ports/messages.js", "../state/jobState.js", "../kinds/taskRegistry.js", "./foldReport.js"],
        ["../dispatch/packUnits.js", "../jobs/cancel.js", "../worker/workerResults.js", "../step/step"],
      ],
      [
        "worker",
        ["../deps.js", "../ports/rejection.js", "../state/jobState.js", "../kinds/taskKinds.js", "./loopHold.js"],
        [
          "../fold/readResult.js",
          "../dispatch/packUnits.js",
          "../jobs/submit.js",
          "../wake/wake.js",
          "../step/step.js",
        ],
      ],
      [
        "dispatch",
        ["../deps.js", "../fold/foldOutcomes.js", "../state/jobStore.js", "../ports/messages", "./packUnits.js"],
        ["../jobs/registerJobs.js", "../worker/worker.js", "../wake/wake.js", "../step/step.js"],
      ],
      [
        "scheduling",
        ["./fairShare.js", "../../library/errors.js"],
        ["../state/jobSchedule.js", "../deps.js", "../dispatch/dispatch.js", "../step/step.js"],
      ],
    ];
    for (const [room, allowed, refusedOnes] of rooms) {
      const file = `src/coordination/${room}/x.ts`;
      expect(await refused(file, [...allowed, ...refusedOnes]), file).toEqual(refusedOnes);
    }
    const deps = ["./ports/ports.js", "./state/jobStops.js", "./kinds/taskRegistry.js"];
    const above = ["./jobs/submit.js", "./fold/foldReport.js", "./dispatch/dispatch.js", "./step/step.js"];
    expect(await refused("src/coordination/deps.ts", [...deps, ...above])).toEqual(above);
    const all = [
      "../jobs/cancel.js",
      "../dispatch/dispatch.js",
      "../fold/foldPoison.js",
      "../state/termHistory.js",
      "../scheduling/fairShare.js",
    ];
    expect(
      await refused("src/coordination/step/x.ts", [...all, "../deps.js", "../wake/wake.js", "./passEnd.js"]),
    ).toEqual([]);
  });

  it("the group-by kind (src/groupBy/) imports of src/ only what the package's main entry exports, as a user's kind does", async () => {
    const allowed = ["./groupByTypes.js", "zod", "csv-parse/sync"];
    const across = [
      "../coordination/kinds/taskRegistry.js",
      "../coordination/deps.js",
      "../app/context.js",
      "../index.js",
    ];
    expect(await refused("src/groupBy/x.ts", [...allowed, ...across])).toEqual(across);
    // Of a module the entry re-exports from, only the names it exports (so no namespace import either).
    const lint = async (code: string) =>
      (await eslint.lintText(code, { filePath: resolve(root, "src/groupBy/x.ts") }))[0]?.messages.length;
    expect(await lint(`import { defineTaskKind, ItemError } from "../coordination/kinds/taskKinds.js";`)).toBe(0);
    expect(await lint(`import type { TaskContext } from "../coordination/kinds/taskKinds.js";`)).toBe(0);
    expect(await lint(`import { storageClientsFromSettings } from "../azure/clients.js";`)).toBe(0);
    expect(await lint(`import { createStorageClients } from "../azure/clients.js";`)).toBe(1);
    expect(await lint(`import * as kinds from "../coordination/kinds/taskKinds.js";\nexport { kinds };`)).toBe(1);
  });

  it("the app may import every folder of src/ and the Azure SDKs", async () => {
    expect(
      await refused("src/app/x.ts", [
        "../library/errors",
        "../azure/clients",
        "../coordination/step/step",
        "./settings",
        "@azure/storage-blob",
      ]),
    ).toEqual([]);
  });

  it("the app's wiring knows no task kind: the group-by kind comes in through a registry, as a user's kind does", async () => {
    expect(await refused("src/app/x.ts", ["../groupBy/groupBy.js", "../groupBy/csvRecords"])).toEqual([
      "../groupBy/groupBy.js",
      "../groupBy/csvRecords",
    ]);
  });

  it("the local host (dev/src/local/) runs the app, with the programming model's types only, and reaches the runtime by name; the command line and the testing entry use it, not it them", async () => {
    const allowed = ["azure-leader-coordinator/internal", "azure-leader-coordinator", "./host", "@azure/storage-blob"];
    const across = ["../cli/main", "../testing/cluster", "../../../src/app/context"];
    expect(await refused("dev/src/local/x.ts", [...allowed, ...across])).toEqual(across);
    expect(await refused("dev/src/local/x.ts", ["@azure/functions"])).toEqual(["@azure/functions"]);
    expect(await refused("dev/src/local/x.ts", ["@azure/functions"], true)).toEqual([]);
  });

  it("the runtime's command line (src/cli/) uses the app's routes: not storage's SDK, nor the development package", async () => {
    const allowed = ["../host/http", "../library/errors", "./flags", "node:util"];
    const across = [
      "../../dev/src/local/run",
      "azure-leader-coordinator-dev",
      "@azure/storage-blob",
      "@azure/functions",
    ];
    expect(await refused("src/cli/x.ts", [...allowed, ...across])).toEqual(across);
  });

  it("the development package's command line (dev/src/cli/) drives the local host, not the testing entry", async () => {
    const allowed = ["../local/run", "azure-leader-coordinator/internal", "./localCommand", "node:util"];
    const across = ["../testing/cluster", "../../../src/cli/flags", "@azure/functions"];
    expect(await refused("dev/src/cli/x.ts", [...allowed, ...across])).toEqual(across);
  });

  it("the testing entry (dev/src/testing/) drives the local host; it does not reach into the command line", async () => {
    const allowed = ["../local/instances", "azure-leader-coordinator/internal", "./cluster"];
    const across = ["../cli/main", "../../../src/library/errors", "@azure/functions"];
    expect(await refused("dev/src/testing/x.ts", [...allowed, ...across])).toEqual(across);
  });

  it("nothing of the library, the adapters, the logic, the app or the registration imports the command line", async () => {
    const tools = ["../cli/main", "../cli/flags"];
    for (const file of ["src/app/x.ts", "src/azure/x.ts", "src/coordination/x.ts", "src/host/x.ts", "src/library/x.ts"])
      expect(await refused(file, tools), file).toEqual(tools);
  });

  it("nothing of the runtime package imports the development package or Azurite, in any folder (issue 44)", async () => {
    const dev = [
      "azurite",
      "azure-leader-coordinator-dev",
      "azure-leader-coordinator-dev/testing",
      "../../dev/src/local/run",
    ];
    for (const file of [
      "src/index.ts",
      "src/internal.ts",
      "src/app/x.ts",
      "src/azure/x.ts",
      "src/coordination/jobs/x.ts",
      "src/host/x.ts",
      "src/library/x.ts",
      "src/cli/x.ts",
      "src/groupBy/x.ts",
    ])
      expect([...new Set(await refused(file, dev))], file).toEqual(dev);
  });
});
