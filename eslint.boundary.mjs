// The library boundary (CONTRIBUTING.md, "Layout"): which folder of src/ may import what. Used by eslint.config.mjs
// and by test/unit/boundary.test.ts, which shows each rule refusing an import across it.

/**
 * `src/` never imports the Functions programming model at run time: the user's app passes `app` in, so the package never
 * loads a second copy of it. Only `src/host/` (the registration and its handlers) uses its types.
 */
const FUNCTIONS_IMPORT = {
  name: "@azure/functions",
  message: "Only src/host/ may use @azure/functions, and only its types (import type); src/ is a library.",
};

/** The Azure SDK packages: only `src/azure/` (and the app's wiring) may import them. */
const AZURE_SDK = "^@azure/(storage-|identity|core-)";

/** A relative import into one of `src/`'s folders (`./app/…` from src/, `../app/…` from a folder of src/). */
const relativeInto = (...folders) => `^\\.\\.?/(\\.\\./)*(${folders.join("|")})(/|$)`;

/** The tools built on the package (the local host, the command line, the testing entry): nothing under them imports them. */
const TOOLS = ["local", "cli", "testing"];
const TOOLS_MESSAGE =
  "The library, the adapters, the logic, the app and the registration must not import the tools built on them (src/local/, src/cli/, src/testing/).";

/** One config block per folder; each folder's block replaces the one before for its files. */
export const boundary = [
  {
    files: ["src/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { paths: [FUNCTIONS_IMPORT] }] },
  },
  {
    // The registration in a user's Function app and its handlers: the types of @azure/functions (the user passes `app`),
    // the app's operations; no storage SDK or adapter (the app wires those).
    files: ["src/host/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: relativeInto("azure"),
              message: "The registration must not import the Azure adapters: the app (src/app/) wires them.",
            },
            { regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE },
            { regex: AZURE_SDK, message: "The registration must not talk to an Azure SDK: the app (src/app/) does." },
          ],
        },
      ],
      "@typescript-eslint/no-restricted-imports": [
        "error",
        { paths: [{ ...FUNCTIONS_IMPORT, allowTypeImports: true }] },
      ],
    },
  },
  {
    // The package's entry points re-export the public API of every folder.
    files: ["src/index.ts"],
    rules: { "no-restricted-imports": "off" },
  },
  {
    // This repo's own Function app is a consumer of the package like any user's app: the public entry only.
    files: ["functions/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^\\.\\./(\\.\\./)*src(/|$)",
              message:
                "functions/ imports the package by name (azure-leader-coordinator), as a user's app does: its build resolves the name to the package's own CommonJS build.",
            },
          ],
        },
      ],
    },
  },
  {
    // The library: leadership, the lease and state ports, fencing, helpers, errors. Usable in any Node service, on
    // any storage: it knows no Azure SDK, no app, no coordination logic.
    files: ["src/library/**/*.ts"],
    ignores: ["src/library/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            {
              regex: relativeInto("app", "azure", "coordination", ...TOOLS),
              message: "The library must not import the app, the Azure adapters, the coordination logic or the tools.",
            },
            {
              regex: AZURE_SDK,
              message: "Only the Azure adapters (src/azure/) talk to an Azure SDK; the library works over its ports.",
            },
          ],
        },
      ],
    },
  },
  {
    // The library's public API: the library and its two Azure adapters (BlobLeaseStore, BlobStateStore).
    files: ["src/library/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            {
              regex: relativeInto("app", "coordination"),
              message: "The library's API must not export the app or the coordination logic.",
            },
          ],
        },
      ],
    },
  },
  {
    // The Azure Storage adapters: of the library's ports and of the coordination logic's ports (ports.ts only).
    files: ["src/azure/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            {
              regex: relativeInto("app"),
              message: "The Azure adapters must not import the app: the app passes them what they need.",
            },
            { regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE },
            {
              regex: "^\\.\\.?/(\\.\\./)*coordination/(?!ports/ports(\\.js)?$)",
              message: "The Azure adapters may import only the coordination logic's ports (coordination/ports/ports).",
            },
          ],
        },
      ],
    },
  },
  {
    // The coordination logic runs over ports: on Azure Storage in the app, on fakes in tests.
    files: ["src/coordination/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            {
              regex: relativeInto("app", "azure"),
              message:
                "The coordination logic must not import the app or the Azure adapters (src/azure/): use its ports (ports.ts, deps.ts).",
            },
            { regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE },
            {
              regex: AZURE_SDK,
              message:
                "Only the Azure adapters (src/azure/) talk to an Azure SDK; the coordination logic works over its ports.",
            },
          ],
        },
      ],
    },
  },
  {
    // The app's wiring and operations: every folder of src/ below it, not the tools built on it.
    files: ["src/app/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { paths: [FUNCTIONS_IMPORT], patterns: [{ regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE }] },
      ],
    },
  },
  {
    // The local Functions host (`local`, the testing entry): runs a user's app as the host does, over the app's
    // wiring; the programming model's types only (the user's app brings @azure/functions, the host captures it).
    files: ["src/local/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              // `../host/…` (the registration), not `./host` (the local host's own module).
              regex: "^\\.\\./(\\.\\./)*(cli|testing|host)(/|$)",
              message:
                "The local host must not import the command line, the testing entry or the registration: it runs the user's app, and they use it.",
            },
          ],
        },
      ],
      "@typescript-eslint/no-restricted-imports": [
        "error",
        { paths: [{ ...FUNCTIONS_IMPORT, allowTypeImports: true }] },
      ],
    },
  },
  {
    // The command line (the package's bin): drives the local host and the app's HTTP routes; storage only through them.
    files: ["src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            { regex: relativeInto("testing"), message: "The command line must not import the testing entry." },
            {
              regex: AZURE_SDK,
              message:
                "The command line reaches storage through the app and the local host (src/local/), not an Azure SDK.",
            },
          ],
        },
      ],
    },
  },
  {
    // The testing entry (`azure-leader-coordinator/testing`): a cluster of the user's app on the local host.
    files: ["src/testing/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [{ regex: relativeInto("cli"), message: "The testing entry must not import the command line." }],
        },
      ],
    },
  },
];
