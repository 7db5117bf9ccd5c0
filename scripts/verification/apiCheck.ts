/**
 * `npm run api:check` (issue 44): the public API reviewed the Azure SDK's way. api-extractor reads the declarations of
 * every public entry of both packages (each package.json's `"tshy"."exports"`, less `./internal`, which carries no
 * compatibility promise) and compares what it would report with the committed report in review/: a change to the
 * public API that the report does not show fails, and so does any warning (an export or member without TSDoc, a TSDoc
 * syntax error, a type the entry uses but does not export).
 *
 *   npm run api:check                 # compare; part of npm run lint
 *   npm run api:check -- --update     # write the reports that changed into review/, then commit them
 *
 * Exit code: 0 when every report is up to date and nothing is reported, 1 otherwise, 2 on a bad command line.
 */
import { rmSync } from "node:fs";
import path from "node:path";
import { parseFlags, UsageError } from "../../src/cli/flags";
import { emitDeclarations, installRuntime } from "./apiCheck/declarations";
import { apiEntries } from "./apiCheck/entries";
import { extractEntry } from "./apiCheck/extract";

const HELP = `Usage: npm run api:check -- [--update]

  --update  write each report that changed into review/ (commit them with the change to the API)

Exit code: 0 when every report in review/ is up to date and api-extractor reports nothing, 1 otherwise, 2 on a bad
command line.
`;

const REPO = path.resolve(__dirname, "..", "..");
/** Git-ignored: the declarations and api-extractor's temporary reports. */
const BUILD_DIR = path.join(REPO, ".api-build");

function main(): void {
  const values = parseFlags(process.argv.slice(2), { update: { type: "boolean" }, help: { type: "boolean" } });
  if (values.help === true) {
    console.log(HELP);
    return;
  }
  const update = values.update === true;
  rmSync(BUILD_DIR, { recursive: true, force: true });
  const compileErrors = emitDeclarations(REPO, BUILD_DIR);
  if (compileErrors.length > 0) {
    console.log(compileErrors.join("\n"));
    console.log(
      `The declarations did not compile (${compileErrors.length} errors): fix them first (npm run typecheck).`,
    );
    process.exitCode = 1;
    return;
  }
  installRuntime(REPO, BUILD_DIR);
  let failed = false;
  for (const entry of apiEntries(REPO)) {
    const report = extractEntry(entry, { repo: REPO, declarationsDir: BUILD_DIR, update });
    const name = `${entry.packageName}${entry.subpath === "." ? "" : entry.subpath.slice(1)}`;
    for (const problem of report.problems) console.log(`${name}: ${problem}`);
    if (report.changed)
      console.log(
        update
          ? `${name}: ${report.reportPath} written`
          : `${name}: the public API changed and ${report.reportPath} does not show it: run npm run api:check -- --update, review the diff and commit it`,
      );
    failed ||= report.problems.length > 0 || (report.changed && !update);
    if (!report.changed && report.problems.length === 0) console.log(`${name}: ${report.reportPath} up to date`);
  }
  process.exitCode = failed ? 1 : 0;
}

try {
  main();
} catch (error: unknown) {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error(`\n${HELP}`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
