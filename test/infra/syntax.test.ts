import path from "node:path";
import { describe, expect, it } from "vitest";
import {
  FIXTURES_DIR,
  INFRA_DIR,
  listFiles,
  parameterDeclarations,
  parseBicepFile,
  parseBicepParamFile,
  stringLiteral,
  syntaxProblems,
  variableDeclarations,
  descendants,
} from "./bicep";

const templates = listFiles(INFRA_DIR, ".bicep");

describe("Bicep syntax (tree-sitter-bicep)", () => {
  it("finds the templates: main.bicep and its modules", () => {
    const names = templates.map((file) => path.relative(INFRA_DIR, file));
    expect(names).toContain("main.bicep");
    expect(names.filter((name) => name.startsWith("modules"))).not.toHaveLength(0);
  });

  it.each(templates.map((file) => [path.relative(INFRA_DIR, file), file]))(
    "%s parses without syntax errors",
    async (_name, file) => {
      const parsed = await parseBicepFile(file);
      expect(syntaxProblems(parsed.root)).toEqual([]);
      expect(parsed.root.hasError).toBe(false);
    },
  );

  it("rejects a deliberately broken template (fixtures/broken.bicep) and says where", async () => {
    const parsed = await parseBicepFile(path.join(FIXTURES_DIR, "broken.bicep"));
    const problems = syntaxProblems(parsed.root);
    expect(parsed.root.hasError).toBe(true);
    expect(problems.length).toBeGreaterThan(0);
    // The fixture's first mistake is `name 'st…'` without a colon on line 4.
    expect(problems[0]?.line).toBe(4);
  });

  it("parses the modules that main.bicep, azd.bicep and their modules reference, and every module file is referenced", async () => {
    const referenced = new Set<string>();
    for (const file of templates) {
      const parsed = await parseBicepFile(file);
      for (const declaration of descendants(parsed.root, "module_declaration")) {
        const target = stringLiteral(declaration.namedChildren.find((child) => child.type === "string"));
        expect(target, `module path in ${parsed.name}`).toBeDefined();
        referenced.add(path.resolve(path.dirname(file), target ?? ""));
      }
    }
    // Two entry points: main.bicep (az deployment group create) and azd.bicep (azd up), which deploys main.bicep.
    const entryPoints = ["main.bicep", "azd.bicep"].map((name) => path.join(INFRA_DIR, name));
    const modules = templates.filter((file) => !entryPoints.includes(file));
    expect([...referenced].filter((file) => !entryPoints.includes(file)).sort()).toEqual(modules);
    expect(referenced).toContain(path.join(INFRA_DIR, "main.bicep"));
  });
});

describe("main.bicepparam", () => {
  const paramFile = path.join(INFRA_DIR, "main.bicepparam");

  it("parses without syntax errors and uses ./main.bicep", async () => {
    const parsed = await parseBicepParamFile(paramFile);
    expect(syntaxProblems(parsed.root)).toEqual([]);
    const using = descendants(parsed.root, "using_statement");
    expect(using).toHaveLength(1);
    expect(stringLiteral(using[0]?.namedChildren[0])).toBe("./main.bicep");
  });

  it("sets only parameters that main.bicep declares", async () => {
    const values = variableDeclarations(await parseBicepParamFile(paramFile));
    const declared = parameterDeclarations(await parseBicepFile(path.join(INFRA_DIR, "main.bicep")));
    expect(values.size).toBeGreaterThan(0);
    for (const name of values.keys()) expect(declared.has(name), `main.bicep declares param ${name}`).toBe(true);
  });
});
