/**
 * No module of the package imports itself back, through any chain: each one can be read after the modules it
 * imports (CONTRIBUTING.md, "Layout"). Type-only imports count too — a circle of types is still a circle a reader
 * walks. Reads every import and export of src/ with the TypeScript compiler's own pre-processor.
 */
import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = resolve(__dirname, "../..");

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** Each file's relative imports, resolved to the files they name (`./x` → `x.ts` or `x/index.ts`). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((spec) => spec.startsWith("."))
      .map((spec) => resolve(dirname(file), spec))
      .flatMap((base) =>
        [`${base}.ts`, join(base, "index.ts")].filter((candidate) => known.has(candidate)).slice(0, 1),
      );
    graph.set(file, targets);
  }
  return graph;
}

/** Every circle of `graph`, each as the chain of files that closes it (depth-first, each circle reported once). */
function circles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    const at = path.indexOf(file);
    if (at >= 0) {
      found.push([...path.slice(at), file]);
      return;
    }
    if (done.has(file)) return;
    path.push(file);
    for (const next of graph.get(file) ?? []) visit(next);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

describe("the package's modules import one way", () => {
  it("finds a circle when there is one (the check itself)", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(circles(graph)).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"]]);
  });

  it("src/ has no import circle, type-only imports included", () => {
    const files = sourceFiles(join(root, "src"));
    expect(files.length).toBeGreaterThan(50);
    const graph = importGraph(files);
    const named = circles(graph).map((circle) => circle.map((file) => relative(root, file)).join(" → "));
    expect(named).toEqual([]);
  });

  it("scripts/ has no import circle either (the local host's run.ts and watch.ts imported each other)", () => {
    const files = sourceFiles(join(root, "scripts")).filter((file) => !file.endsWith(".d.ts"));
    expect(files.length).toBeGreaterThan(30);
    const graph = importGraph(files);
    const named = circles(graph).map((circle) => circle.map((file) => relative(root, file)).join(" → "));
    expect(named).toEqual([]);
  });
});
