import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

/**
 * Emits the declarations of the packages' sources (src/ and dev/src/) into `outDir`, with the repository's compiler
 * options — what each package's build (tshy, over tsconfig.build.json, which extends tsconfig.json) emits beside its
 * JavaScript, without the builds' JavaScript. The development package's sources import the runtime by its name, and
 * its declarations keep that name: {@link installRuntime} puts the runtime's where that name resolves.
 *
 * @returns the emit's diagnostics as text, empty when it emitted cleanly.
 */
export function emitDeclarations(repo: string, outDir: string): string[] {
  const configPath = path.join(repo, "tsconfig.json");
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, undefined, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
    },
  });
  if (parsed === undefined) throw new Error(`Cannot read ${configPath}.`);
  const packageSources = [path.join(repo, "src") + path.sep, path.join(repo, "dev", "src") + path.sep];
  const rootNames = parsed.fileNames.filter((file) =>
    packageSources.some((folder) => path.resolve(file).startsWith(folder)),
  );
  const program = ts.createProgram({
    rootNames,
    options: {
      ...parsed.options,
      noEmit: false,
      declaration: true,
      emitDeclarationOnly: true,
      declarationMap: false,
      sourceMap: false,
      rootDir: repo,
      outDir,
    },
  });
  // Only the emit's own diagnostics: the type check is npm run typecheck's (this would double its time).
  const diagnostics = program.emit().diagnostics;
  return diagnostics.map((diagnostic) => ts.formatDiagnostic(diagnostic, formatHost(repo)).trimEnd());
}

function formatHost(repo: string): ts.FormatDiagnosticsHost {
  return {
    getCanonicalFileName: (fileName) => fileName,
    getCurrentDirectory: () => repo,
    getNewLine: () => "\n",
  };
}

/**
 * Lays the runtime's declarations out as an installed package, `outDir/node_modules/azure-leader-coordinator` with
 * its entries' `types`, where the development package's declarations (`outDir/dev/src/…`) find it by name, as they
 * do in a user's project. api-extractor then sees the runtime as another package: the development package's report
 * names the runtime's types as imports rather than copying them in. `outDir/package.json` (of no name) keeps the
 * declarations out of the repository's package, where the runtime's name would resolve to the package itself (a
 * self-reference, to its build in dist/).
 */
export function installRuntime(repo: string, outDir: string): void {
  writeFileSync(path.join(outDir, "package.json"), JSON.stringify({ private: true, type: "commonjs" }));
  const manifest = JSON.parse(readFileSync(path.join(repo, "package.json"), "utf8")) as {
    name: string;
    tshy: { exports: Record<string, string> };
  };
  const installed = path.join(outDir, "node_modules", manifest.name);
  mkdirSync(installed, { recursive: true });
  cpSync(path.join(outDir, "src"), path.join(installed, "src"), { recursive: true });
  const exports = Object.fromEntries(
    Object.entries(manifest.tshy.exports)
      .filter(([, source]) => source.endsWith(".ts"))
      .map(([subpath, source]) => [subpath, { types: source.replace(/\.ts$/, ".d.ts") }]),
  );
  writeFileSync(
    path.join(installed, "package.json"),
    JSON.stringify({ name: manifest.name, type: "commonjs", exports }, null, 2),
  );
}
