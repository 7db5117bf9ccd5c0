// Type-aware linting with zero warnings (CONTRIBUTING.md, "Style and tools").
import js from "@eslint/js";
import stylistic from "@stylistic/eslint-plugin";
import tseslint from "typescript-eslint";
import { boundary } from "./eslint.boundary.mjs";

export default tseslint.config(
  {
    ignores: [
      "eslint.config.mjs",
      "eslint.boundary.mjs",
      "dist/**",
      "dev/dist/**",
      "node_modules/**",
      "coverage/**",
      ".local/**",
      "bench-results/**",
      // Users' projects (test/consumer/*app/), each compiled against the packed package by a consumer test with its own
      // tsconfig.
      "test/consumer/*app/**",
      ".deploy/**",
      ".bicep-cli/**",
    ],
  },
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
    // Plain ES module fixtures (a user's app entry as Node loads it): linted without type information.
    files: ["test/**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: "module",
      globals: { setInterval: "readonly" },
    },
  },
  {
    files: ["src/**/*.ts", "dev/src/**/*.ts"],
    rules: {
      "no-console": "error",
      // No product function over about 80 lines (CONTRIBUTING.md, "Style and tools"): a longer one is a sequence of
      // named parts. Counted as written, blank lines and comments aside.
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // One width for every line (CONTRIBUTING.md, "Style and tools"): Prettier wraps code to it; comments are wrapped
    // by hand. Strings, template literals and URLs may run past it, as Prettier leaves them.
    plugins: { "@stylistic": stylistic },
    rules: {
      "@stylistic/max-len": [
        "error",
        {
          code: 120,
          tabWidth: 2,
          ignoreUrls: true,
          ignoreStrings: true,
          ignoreTemplateLiterals: true,
          ignoreRegExpLiterals: true,
        },
      ],
    },
  },
  // The library boundary (CONTRIBUTING.md, "Layout").
  ...boundary,
);
