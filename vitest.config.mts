import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests that time real leases run first, two files at a time; the multi-process suites (end-to-end, chaos) run after
// them, one file at a time, so a 2-core machine never runs a chaos scenario (or the CPU-bound simulator) beside a
// timing-sensitive test.
export default defineConfig({
  // The examples import the packages by name, as a user's app does, and so does the development package (dev/) the
  // runtime's (tsconfig.json maps the same names).
  resolve: {
    alias: [
      {
        find: /^azure-leader-coordinator-dev\/testing$/,
        replacement: fileURLToPath(new URL("./dev/src/testing/index.ts", import.meta.url)),
      },
      {
        find: /^azure-leader-coordinator-dev$/,
        replacement: fileURLToPath(new URL("./dev/src/index.ts", import.meta.url)),
      },
      {
        find: /^azure-leader-coordinator\/internal$/,
        replacement: fileURLToPath(new URL("./src/internal.ts", import.meta.url)),
      },
      {
        find: /^azure-leader-coordinator\/leader-election$/,
        replacement: fileURLToPath(new URL("./src/library/index.ts", import.meta.url)),
      },
      { find: /^azure-leader-coordinator$/, replacement: fileURLToPath(new URL("./src/index.ts", import.meta.url)) },
    ],
  },
  test: {
    // Stops the run on a Node.js older than the engines floor, saying so (test/support/nodeFloor.ts).
    globalSetup: ["./test/support/nodeFloor.ts"],
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: "unit+integration",
          include: [
            "test/unit/**/*.test.ts",
            "test/integration/**/*.test.ts",
            "test/infra/**/*.test.ts",
            "test/local/**/*.test.ts",
          ],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "processes",
          include: ["test/e2e/**/*.test.ts", "test/chaos/**/*.test.ts"],
          // The WebJobs SDK side by side (`npm run test:conformance`): not in `npm test` (see
          // docs/contributing/testing.md).
          exclude: ["test/e2e/conformanceHost.test.ts"],
          sequence: { groupOrder: 1 },
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          // The simulator: CPU-bound, deterministic (virtual time), so its two halves of CI's budget run side by side,
          // one per core, after the multi-process suites and never beside them.
          name: "simulation",
          include: ["test/sim/**/*.test.ts"],
          sequence: { groupOrder: 2 },
        },
      },
      // Only with CONFORMANCE=1 (`npm run test:conformance`).
      ...(process.env.CONFORMANCE === "1"
        ? [
            {
              extends: true as const,
              test: {
                name: "conformance",
                include: ["test/e2e/conformanceHost.test.ts"],
                sequence: { groupOrder: 4 },
              },
            },
          ]
        : []),
      {
        extends: true,
        test: {
          // The packed package as users meet it: packed once per run (packOnce.ts, only when a file here runs), then
          // one user's project per file, after the other tiers, one file at a time.
          name: "consumer",
          include: ["test/consumer/**/*.test.ts"],
          globalSetup: ["./test/consumer/packOnce.ts"],
          sequence: { groupOrder: 3 },
          fileParallelism: false,
        },
      },
    ],
  },
});
