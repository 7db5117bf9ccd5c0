// Type-aware linting with zero warnings (CONTRIBUTING.md, "Style and tools").
import js from "@eslint/js";
import tseslint from "typescript-eslint";

/** `src/` never imports the Functions programming model: only `functions/` registers with it. */
const FUNCTIONS_IMPORT = { name: "@azure/functions", message: "Only functions/ may import @azure/functions; src/ is a library." };

/** A relative import into one of `src/`'s folders (`./app/…` from src/, `../app/…` from a folder of src/). */
const relativeInto = (...folders) => `^\\.\\.?/(\\.\\./)*(${folders.join("|")})(/|$)`;

export default tseslint.config(
  { ignores: ["eslint.config.mjs", "dist/**", "node_modules/**", "coverage/**", ".local/**", "bench-results/**"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true, allowBoolean: true }],
      "@typescript-eslint/no-non-null-assertion": "error",
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-extraneous-class": "off",
      "@typescript-eslint/no-confusing-void-expression": ["error", { ignoreArrowShorthand: true }],
    },
  },
  {
    // Plain CommonJS helpers (run without a TypeScript loader): linted without type information.
    files: ["**/*.js"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: "commonjs",
      globals: { require: "readonly", process: "readonly", __dirname: "readonly" },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["src/**/*.ts"],
    rules: { "no-console": "error" },
  },
  // The library boundary (CONTRIBUTING.md, "Layout"). Each folder's block replaces the one before for its files.
  {
    files: ["src/**/*.ts"],
    rules: { "no-restricted-imports": ["error", { paths: [FUNCTIONS_IMPORT] }] },
  },
  {
    // The library: leadership, lease, fencing, their helpers and errors. Usable in any Node service.
    files: ["src/leadership/**/*.ts", "src/lease/**/*.ts", "src/fencing/**/*.ts", "src/util/**/*.ts", "src/errors.ts", "src/index.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [FUNCTIONS_IMPORT],
          patterns: [{ regex: relativeInto("app", "config", "coordination"), message: "The library must not import the app, its settings or the coordination logic." }],
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
          patterns: [{ regex: relativeInto("app", "storage"), message: "The coordination logic must not import the app or the Azure adapters (src/storage): use its ports (ports.ts, deps.ts)." }],
        },
      ],
    },
  },
);
