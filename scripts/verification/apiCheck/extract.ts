import path from "node:path";
import { Extractor, ExtractorConfig, ExtractorLogLevel, type ExtractorMessage } from "@microsoft/api-extractor";
import { TSDocConfigFile } from "@microsoft/tsdoc-config";
import type { ApiEntry } from "./entries";

/** What api-extractor found for one entry. */
export interface EntryReport {
  entry: ApiEntry;
  /** The committed report, relative to the repository. */
  reportPath: string;
  /** The report it would write differs from the committed one (or there is none). */
  changed: boolean;
  /** Its errors and warnings, each as `file:line — text (id)`. */
  problems: string[];
}

/** api-extractor's own words for a changed report: the check says it once, with what to run. */
const REPORTED_AS_CHANGED = new Set<string>([
  "console-api-report-changed",
  "console-api-report-created",
  "console-api-report-not-copied",
  "console-api-report-copied",
]);

/** Options of {@link extractEntry}. */
export interface ExtractOptions {
  repo: string;
  /** The folder {@link emitDeclarations} wrote the declarations to. */
  declarationsDir: string;
  /** Write the report into review/ when it changed, as `--update` does. @default false (compare only) */
  update?: boolean;
}

/**
 * Runs api-extractor over one entry's declarations with review/api-extractor.json and review/tsdoc.json (the TSDoc
 * tags the sources use, `@default` among them): the report goes to its temporary folder and is compared with the
 * committed one (written over it with `update`).
 */
export function extractEntry(entry: ApiEntry, { repo, declarationsDir, update = false }: ExtractOptions): EntryReport {
  const configObject = ExtractorConfig.loadFile(path.join(repo, "review", "api-extractor.json"));
  configObject.mainEntryPointFilePath = path.join(declarationsDir, entry.source.replace(/\.ts$/, ".d.ts"));
  configObject.apiReport = { ...configObject.apiReport, enabled: true, reportFileName: entry.reportName };
  configObject.compiler = { overrideTsconfig: compilerConfig(repo, configObject.mainEntryPointFilePath) };
  const config = ExtractorConfig.prepare({
    configObject,
    configObjectFullPath: path.join(repo, "review", "api-extractor.json"),
    packageJsonFullPath: entry.packageJsonPath,
    tsdocConfigFile: TSDocConfigFile.loadFile(path.join(repo, "review", "tsdoc.json")),
  });
  const problems: string[] = [];
  const result = Extractor.invoke(config, {
    localBuild: update,
    messageCallback: (message: ExtractorMessage) => {
      // Reported here, once, with the entry; api-extractor's own lines (its version, "report changed") stay quiet.
      if (message.logLevel === ExtractorLogLevel.Error || message.logLevel === ExtractorLogLevel.Warning) {
        if (!REPORTED_AS_CHANGED.has(message.messageId)) problems.push(describe(message, repo));
      }
      message.handled = true;
    },
  });
  return {
    entry,
    reportPath: path.relative(repo, path.join(config.reportFolder, config.reportConfigs[0]?.fileName ?? "")),
    changed: result.apiReportChanged,
    problems,
  };
}

function describe(message: ExtractorMessage, repo: string): string {
  const where =
    message.sourceFilePath === undefined
      ? ""
      : `${path.relative(repo, message.sourceFilePath)}:${message.sourceFileLine ?? 0} — `;
  return `${where}${message.text} (${message.messageId})`;
}

/** The compiler options api-extractor analyses with: the repository's, from the entry's declarations alone. */
function compilerConfig(repo: string, entryFile: string): object {
  return {
    compilerOptions: {
      target: "ES2024",
      lib: ["ES2024"],
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      types: ["node"],
      typeRoots: [path.join(repo, "node_modules", "@types")],
    },
    files: [entryFile],
  };
}
