// The library boundary (CONTRIBUTING.md, "Layout"): which folder of src/ may import what. Used by eslint.config.mjs
// and by test/unit/boundary.test.ts, which shows each rule refusing an import across it.
import { readFileSync } from "node:fs";

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

/**
 * The runtime's command line (src/cli/), built on the package: nothing under it imports it. The local host and the
 * testing entry are the development package's (dev/src/), which the runtime never imports (see DEV_PACKAGE).
 */
const TOOLS = ["cli"];
const TOOLS_MESSAGE =
  "The library, the adapters, the logic, the app and the registration must not import the command line built on them (src/cli/).";

/**
 * The runtime package never depends on the development tools or on Azurite in any form (issue 44): a user's production
 * install must not carry them.
 */
const DEV_PACKAGE = [
  {
    name: "azurite",
    message: "The runtime package never uses Azurite: the development package (dev/) runs it.",
  },
];
const DEV_PATTERNS = [
  {
    regex: "^azure-leader-coordinator-dev(/|$)|^(\\.\\./)+dev/",
    message: "The runtime package never imports the development package (dev/): it is a dev dependency of users' apps.",
  },
];

/**
 * The development package (dev/) reaches the runtime by name only, as it is installed beside it in a user's project:
 * `azure-leader-coordinator` (the public API) and `azure-leader-coordinator/internal` (what the tools build on).
 */
const RUNTIME_BY_NAME = [
  {
    regex: "^(\\.\\./){2,}(src|scripts|test)(/|$)",
    message:
      "The development package imports the runtime by name (azure-leader-coordinator, azure-leader-coordinator/internal), never by a path out of dev/: it is published on its own.",
  },
];

/**
 * What the package's main entry exports, by the module it re-exports from (`coordination/kinds/taskKinds.js` →
 * `defineTaskKind`, …), read from src/index.ts: what the group-by kind may import of src/, as a user's kind imports the
 * package.
 */
const PUBLIC_API = Object.fromEntries(
  [
    ...readFileSync(new URL("./src/index.ts", import.meta.url), "utf8").matchAll(
      /export (?:type )?\{([^}]*)\} from "\.\/([^"]+)"/g,
    ),
  ]
    .filter(([, , module]) => !module.startsWith("groupBy/"))
    .map(([, names, module]) => [
      module,
      names
        .split(",")
        .map((name) => name.replace(/^\s*type\s+/, "").trim())
        .filter((name) => name !== ""),
    ]),
);

/**
 * The rooms of src/coordination/ (CONTRIBUTING.md, "Layout"; each room's README.md) and which other rooms each may
 * import: calls go down this list, never up, and no room imports the step (`step/`, which runs them) or anything of
 * a room not named here. `deps` is `coordination/deps.ts`, the ports and limits the rooms above it take.
 */
const ROOMS = {
  kinds: [],
  ports: [],
  state: ["ports"],
  wake: ["ports"],
  deps: ["ports", "state", "kinds"],
  flow: ["ports", "state", "kinds"],
  jobs: ["deps", "ports", "state", "kinds", "flow"],
  fold: ["deps", "ports", "state", "kinds", "flow"],
  worker: ["deps", "ports", "state", "kinds", "flow"],
  dispatch: ["deps", "ports", "state", "kinds", "fold", "flow"],
  scheduling: [],
};

/** The coordination logic's own refusals, for every file of src/coordination/ (the rooms add theirs). */
const COORDINATION_PATTERNS = [
  {
    regex: relativeInto("app", "azure", "groupBy"),
    message:
      "The coordination logic must not import the app, the Azure adapters (src/azure/) or a task kind (src/groupBy/): use its ports (ports/ports.ts, deps.ts).",
  },
  { regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE },
  {
    regex: AZURE_SDK,
    message: "Only the Azure adapters (src/azure/) talk to an Azure SDK; the coordination logic works over its ports.",
  },
];

/** One block for src/coordination/ (the step, `step/`, may import every room), then one per room and deps.ts. */
function coordinationRooms() {
  const rule = (patterns) => ({
    "no-restricted-imports": [
      "error",
      { paths: [FUNCTIONS_IMPORT], patterns: [...COORDINATION_PATTERNS, ...patterns] },
    ],
  });
  const names = [...Object.keys(ROOMS), "step"];
  return [
    // The coordination logic runs over ports: on Azure Storage in the app, on fakes in tests.
    { files: ["src/coordination/**/*.ts"], rules: rule([]) },
    ...Object.entries(ROOMS).map(([room, allowed]) => {
      const refused = names.filter((name) => name !== room && !allowed.includes(name));
      const from = room === "deps" ? "\\." : "\\.\\.";
      return {
        files: room === "deps" ? ["src/coordination/deps.ts"] : [`src/coordination/${room}/**/*.ts`],
        rules: rule([
          {
            regex: `^${from}/(${refused.join("|")})(/|\\.js$|$)`,
            message: `coordination/${room} may import of the coordination logic only ${allowed.length === 0 ? "itself" : allowed.join(", ")} (calls go one way between its rooms: CONTRIBUTING.md, "Layout").`,
          },
        ]),
      };
    }),
  ];
}

/**
 * Adds the runtime's refusal of the development package and Azurite (DEV_PACKAGE, DEV_PATTERNS) to every block of the
 * runtime's folders: a folder's block replaces the one before for its files, so each must carry it.
 */
function withRuntimeRefusals(blocks) {
  return blocks.map((block) => {
    if (!block.files.every((file) => file.startsWith("src/"))) return block;
    const rule = block.rules["no-restricted-imports"];
    const options = Array.isArray(rule) ? rule[1] : { paths: [], patterns: [] };
    const refusing = {
      paths: [...(options.paths ?? []), ...DEV_PACKAGE],
      patterns: [...(options.patterns ?? []), ...DEV_PATTERNS],
    };
    return { ...block, rules: { ...block.rules, "no-restricted-imports": ["error", refusing] } };
  });
}

/** One config block per folder; each folder's block replaces the one before for its files. */
export const boundary = withRuntimeRefusals([
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
  ...coordinationRooms(),
  {
    // The group-by kind stands where a user's kind does: it imports of src/ only what the package's main entry exports.
    files: ["src/groupBy/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            ...Object.entries(PUBLIC_API).map(([module, names]) => ({
              regex: `^\\.\\./${module.replace(/\.js$/, "")}(\\.js)?$`,
              allowImportNames: names,
              message: `The group-by kind imports only the package's public API: of ${module}, what src/index.ts exports (${names.join(", ")}).`,
            })),
            {
              regex: `^\\.\\./(?!(${Object.keys(PUBLIC_API)
                .map((module) => module.replace(/\.js$/, ""))
                .join("|")})(\\.js)?$)`,
              message:
                "The group-by kind imports only the package's public API (what src/index.ts exports), as a user's kind imports the package.",
            },
            { regex: AZURE_SDK, message: "A task kind works on its input, not on storage's SDK." },
          ],
        },
      ],
    },
  },
  {
    // The app's wiring and operations: every folder of src/ below it, not the tools built on it, nor a task kind.
    files: ["src/app/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            { regex: relativeInto(...TOOLS), message: TOOLS_MESSAGE },
            {
              regex: relativeInto("groupBy"),
              message:
                "The app's wiring knows no task kind (src/groupBy/): kinds come in through the registry the caller passes, as a user's do.",
            },
          ],
        },
      ],
    },
  },
  {
    // The local Functions host (`local`, the testing entry): runs a user's app as the host does, over the app's
    // wiring; the programming model's types only (the user's app brings @azure/functions, the host captures it).
    files: ["dev/src/local/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^\\.\\./(\\.\\./)*(cli|testing)(/|$)",
              message:
                "The local host must not import the command line or the testing entry: it runs the user's app, and they use it.",
            },
            ...RUNTIME_BY_NAME,
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
    // The runtime's command line (its bin): the app's HTTP routes; no storage.
    files: ["src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            {
              regex: AZURE_SDK,
              message: "The command line reaches storage through the app's HTTP routes, not an Azure SDK.",
            },
          ],
        },
      ],
    },
  },
  {
    // The development package's command line (its bin): the local host, the app's routes; storage through them.
    files: ["dev/src/cli/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            { regex: "^\\.\\./testing(/|$)", message: "The command line must not import the testing entry." },
            ...RUNTIME_BY_NAME,
          ],
        },
      ],
    },
  },
  {
    // The testing entry (`azure-leader-coordinator-dev/testing`): a kind alone, a cluster of the user's app.
    files: ["dev/src/testing/**/*.ts", "dev/src/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [
            { regex: "^\\.\\./cli(/|$)", message: "The testing entry must not import the command line." },
            ...RUNTIME_BY_NAME,
          ],
        },
      ],
    },
  },
]);
