import path from "node:path";
import ts from "typescript";
import { moduleFileName, type BlockModule } from "./typescriptBlocks";

/**
 * Compiles the docs' TypeScript modules ({@link BlockModule}) in memory, as files of a project inside the repository
 * (so `node_modules` and `tsconfig.json`'s mapping of the packages' names to their sources resolve as they do for the
 * repository's own code), and reports each error at its Markdown line. Only the blocks' own diagnostics are asked for:
 * the packages' sources are type-checked by `npm run typecheck`.
 */

/** A compile error of a docs block, at its Markdown line. */
export interface BlockError {
  file: string;
  line: number;
  message: string;
}

/** The compiler options of the repository's `tsconfig.json`, for a program that emits nothing. */
function repositoryOptions(repo: string): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(repo, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (parsed === undefined) throw new Error(`cannot read ${path.join(repo, "tsconfig.json")}`);
  return { ...parsed.options, noEmit: true };
}

/** `folder` and every folder above it. */
function ancestors(folder: string): string[] {
  const parent = path.dirname(folder);
  return parent === folder ? [folder] : [folder, ...ancestors(parent)];
}

/** Whether a module's name makes it CommonJS (`.ts` or `.cts` under the repository's `"type": "commonjs"`). */
const isCommonJs = (module: BlockModule): boolean => /\.c?ts$/.test(module.name);

/**
 * Compiles `modules` against the repository at `repo`; returns every error, at its Markdown file and line. A page
 * whose project has a CommonJS file (as the Functions template's is) is compiled with the packages' CommonJS builds,
 * the other pages with their ESM builds: a user's project uses one or the other.
 */
export function compileBlocks(repo: string, modules: readonly BlockModule[]): BlockError[] {
  const commonJsPages = new Set(modules.filter(isCommonJs).map((module) => module.file));
  const commonJs = modules.filter((module) => commonJsPages.has(module.file));
  const esm = modules.filter((module) => !commonJsPages.has(module.file));
  return [...compileProgram(repo, esm, "esm"), ...compileProgram(repo, commonJs, "commonjs")].sort(
    (a, b) => a.file.localeCompare(b.file) || a.line - b.line,
  );
}

/** One program of `modules`, the packages read as the build of the format given. */
function compileProgram(repo: string, modules: readonly BlockModule[], format: "esm" | "commonjs"): BlockError[] {
  if (modules.length === 0) return [];
  const options = repositoryOptions(repo);
  const virtual = new Map(modules.map((module) => [moduleFileName(repo, module), module]));
  const host = ts.createCompilerHost(options);
  const fileExists = host.fileExists.bind(host);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  const directoryExists = host.directoryExists?.bind(host);
  const folders = new Set([...virtual.keys()].flatMap((name) => ancestors(path.dirname(name))));
  host.fileExists = (name) => virtual.has(name) || fileExists(name);
  host.directoryExists = (name) => folders.has(name) || (directoryExists?.(name) ?? false);
  host.readFile = (name) => virtual.get(name)?.code ?? readFile(name);
  // The packages' sources are CommonJS by the repository's package.json; an ESM project meets their ESM builds (each
  // with its own package.json of "type": "module"), whose imports take the ESM types of the Azure SDK. So for it their
  // sources are read as ESM, as the builds its `import`s resolve to are.
  const packages = [path.join(repo, "src") + path.sep, path.join(repo, "dev", "src") + path.sep];
  host.getSourceFile = (name, language, onError, create) => {
    const module = virtual.get(name);
    if (module !== undefined) return ts.createSourceFile(name, module.code, language, true);
    const asEsm =
      format === "esm" && packages.some((folder) => name.startsWith(folder)) && typeof language === "object"
        ? { ...language, impliedNodeFormat: ts.ModuleKind.ESNext as ts.ResolutionMode }
        : language;
    return getSourceFile(name, asEsm, onError, create);
  };
  const program = ts.createProgram([...virtual.keys()], options, host);
  const errors: BlockError[] = [];
  for (const [name, module] of virtual) {
    const source = program.getSourceFile(name);
    if (source === undefined) continue;
    for (const diagnostic of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      const at = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line;
      errors.push({
        file: module.file,
        line: module.lines[at] ?? module.lines[0] ?? 0,
        message: `TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, " ")}`,
      });
    }
  }
  return errors;
}
