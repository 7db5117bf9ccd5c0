import path from "node:path";
import { describe, expect, it } from "vitest";
import { compileBlocks } from "../../scripts/verification/docsCheck/compileBlocks";
import { typeScriptModules } from "../../scripts/verification/docsCheck/typescriptBlocks";

const REPO = path.resolve(__dirname, "..", "..");
const fence = "```";

/**
 * `npm run docs:check`'s TypeScript check (issue 45): a page's `ts` blocks compile against the packages, as a user
 * would paste them; a fixture page with broken blocks is reported line by line.
 */
describe("the docs' TypeScript blocks", () => {
  const page = [
    "# A guide", // 1
    "", // 2
    `${fence}ts`, // 3
    'import { defineTaskKind } from "azure-leader-coordinator";', // 4
    'export const words = defineTaskKind({ name: "words", process: (input) => ({ n: input.text.length }) });', // 5
    fence, // 6
    "", // 7
    "<!-- docs-check: continues -->", // 8
    `${fence}typescript`, // 9
    "const n: string = words.name.length;", // 10: a number is not a string
    fence, // 11
    "", // 12
    `${fence}ts`, // 13
    'import { registerCoordinator } from "azure-leader-coordinator";', // 14
    "registerCoordinator(app, { taskKinds: [thumbnails] });", // 15: neither name exists here
    fence, // 16
    "", // 17
    "<!-- docs-check: fragment -->", // 18
    `${fence}ts`, // 19
    "this is not TypeScript at all", // 20
    fence, // 21
    "", // 22
    "<!-- docs-check: assume declare const jpeg: Uint8Array; -->", // 23
    "", // 24
    `${fence}ts`, // 25
    'import { runKind } from "azure-leader-coordinator-dev/testing";', // 26
    'import { words } from "./src/words.js";', // 27
    'const run = await runKind(words, [{ blob: "photos/1.jpg", content: jpeg }]);', // 28
    "run.items.map((item) => item.status);", // 29
    fence, // 30
    "", // 31
    "<!-- docs-check: file src/words.ts -->", // 32
    `${fence}ts`, // 33
    'export { words } from "./kinds.js";', // 34: no such file in the page's project
    fence, // 35
    "", // 36
    "<!-- docs-check: maybe -->", // 37
    `${fence}bash`, // 38
    "npm test", // 39
    fence, // 40
    "", // 41
    "<!-- docs-check: skip -->", // 42: not a marker the check knows
    `${fence}ts`, // 43
    "export const x = 1;", // 44
    fence, // 45
  ].join("\n");

  it("groups a page's blocks into modules, and names markers it cannot use", () => {
    const found = typeScriptModules("docs/guide.md", page);
    expect(found.modules.map((module) => [module.name, module.lines])).toEqual([
      ["block-L3.mts", [4, 5, 10]],
      ["block-L13.mts", [14, 15]],
      ["block-L25.mts", [23, 26, 27, 28, 29]],
      ["src/words.ts", [34]],
      ["block-L43.mts", [44]],
    ]);
    expect(found.fragments).toEqual([19]);
    expect(found.problems).toEqual([
      {
        file: "docs/guide.md",
        line: 37,
        why: 'docs-check marker "maybe" before a block that is not TypeScript: only ts blocks take them',
      },
      {
        file: "docs/guide.md",
        line: 42,
        why: 'unknown docs-check marker "skip": fragment, continues, file NAME.ts or assume DECLARATIONS',
      },
    ]);
  });

  it("reports each compile error at its Markdown line, against the packages' real types", () => {
    const errors = compileBlocks(REPO, typeScriptModules("docs/guide.md", page).modules);
    expect(errors.map((error) => `${error.line} ${error.message}`)).toEqual([
      "10 TS2322: Type 'number' is not assignable to type 'string'.",
      "15 TS2304: Cannot find name 'app'.",
      "15 TS2304: Cannot find name 'thumbnails'.",
      "34 TS2307: Cannot find module './kinds.js' or its corresponding type declarations.",
    ]);
  }, 120_000);

  it("passes blocks that compile, a kind, its test and a registration", () => {
    const good = [
      `${fence}ts`,
      'import { app } from "@azure/functions";',
      'import { defineTaskKind, registerCoordinator } from "azure-leader-coordinator";',
      'import { runKind } from "azure-leader-coordinator-dev/testing";',
      'const words = defineTaskKind({ name: "words", process: (input) => ({ n: input.text.length }) });',
      "export const coordinator = registerCoordinator(app, { taskKinds: [words] });",
      'const run = await runKind(words, ["a b"]);',
      "const done: number = run.done;",
      "console.log(done);",
      fence,
    ].join("\n");
    // An ESM project's Azure SDK client is the one the package's ESM build takes; a CommonJS project's, its CommonJS's.
    const sdk = [
      `${fence}ts`,
      'import { BlobServiceClient } from "@azure/storage-blob";',
      'import { BlobStateStore } from "azure-leader-coordinator/leader-election";',
      'const blobs = BlobServiceClient.fromConnectionString("UseDevelopmentStorage=true");',
      'export const store = new BlobStateStore(blobs, "s");',
      fence,
    ].join("\n");
    const commonJs = sdk.replace(`${fence}ts`, `<!-- docs-check: file src/store.ts -->\n${fence}ts`);
    expect(
      compileBlocks(REPO, [
        ...typeScriptModules("docs/good.md", good).modules,
        ...typeScriptModules("docs/esm.md", sdk).modules,
        ...typeScriptModules("docs/commonjs.md", commonJs).modules,
      ]),
    ).toEqual([]);
  }, 120_000);
});
