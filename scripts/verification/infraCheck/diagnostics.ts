/** One diagnostic of the Bicep compiler or its linter, as `bicep build`/`lint` print them. */
export interface BicepDiagnostic {
  /** Path relative to the folder the compiler ran in (the repository root, or a user's project). */
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly level: "Error" | "Warning" | "Info";
  /** `BCP037` for the compiler's own, the rule's name (`use-recent-api-versions`) for the linter's. */
  readonly code: string;
  readonly message: string;
}

const LINE = /^(.+?)\((\d+),(\d+)\) : (Error|Warning|Info) ([^:\s]+): (.*?)(?: \[https?:\/\/[^\]]+\])?$/;

/**
 * The diagnostics in the compiler's output (stdout and stderr together), each once: `bicep lint --pattern` reports a
 * module once per file that references it, and `build` repeats what `lint` says.
 */
export function parseDiagnostics(output: string, cwd: string): BicepDiagnostic[] {
  const seen = new Map<string, BicepDiagnostic>();
  for (const raw of output.split(/\r?\n/)) {
    const match = LINE.exec(raw.trim());
    if (match === null) continue;
    const [, file = "", line = "0", column = "0", level = "Error", code = "", message = ""] = match;
    const relative = file.startsWith(cwd + "/") ? file.slice(cwd.length + 1) : file;
    const diagnostic: BicepDiagnostic = {
      file: relative,
      line: Number(line),
      column: Number(column),
      level: level as BicepDiagnostic["level"],
      code,
      message,
    };
    seen.set(formatDiagnostic(diagnostic), diagnostic);
  }
  return [...seen.values()].sort((a, b) => formatDiagnostic(a).localeCompare(formatDiagnostic(b)));
}

/** `file(line,column): Level code: message`, as the compiler prints it, without the link. */
export function formatDiagnostic(d: BicepDiagnostic): string {
  return `${d.file}(${d.line},${d.column}): ${d.level} ${d.code}: ${d.message}`;
}
