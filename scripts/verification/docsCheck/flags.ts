import { codeLines } from "./markdown";

/**
 * Checks that every flag the docs show for a command is one that command's `--help` lists (issue 44): each command
 * line in a Markdown file's code (a fenced block's line, continued lines joined, or an inline code span) that runs one
 * of the known commands has its `--flags` looked up in that command's usage.
 */

/** A command the docs may show, and its usage text (what its `--help` prints). */
export interface DocumentedCommand {
  /** How the docs write it, e.g. /azure-leader-coordinator-dev\s+local\b/: the flags follow the match. */
  pattern: RegExp;
  /** Its usage text; undefined when the command does not exist (the docs name a command that moved or never was). */
  usage: string | undefined;
  /** What to say when `usage` is undefined. */
  missing?: string;
  name: string;
}

/** A flag, or a command, the docs show that its command does not take. */
export interface UnknownFlag {
  file: string;
  line: number;
  command: string;
  flag: string;
  why: string;
}

/** The `--flags` of a command line after the command itself, up to the end of that shell command. */
export function flagsAfter(commandLine: string): string[] {
  const end = commandLine.search(/\s(\||&&|;|#|>)\s|\)|$/);
  return commandLine
    .slice(0, end === -1 ? undefined : end)
    .split(/\s+/)
    .filter((token) => /^--[a-z][a-z0-9-]*/.test(token))
    .map((token) => /^--[a-z][a-z0-9-]*/.exec(token)?.[0] ?? token);
}

/** Whether `usage` lists `flag` (as a whole word). */
function lists(usage: string, flag: string): boolean {
  return new RegExp(`(^|[^a-z0-9-])${flag}(?![a-z0-9-])`).test(usage);
}

/** The code of a Markdown file with each fenced block's continued lines (ending in `\`) joined. */
function joinedCode(text: string): { text: string; line: number }[] {
  const joined: { text: string; line: number }[] = [];
  let carry: { text: string; line: number } | undefined;
  for (const code of codeLines(text)) {
    const current = carry === undefined ? code : { text: `${carry.text} ${code.text}`, line: carry.line };
    if (/\\\s*$/.test(current.text)) carry = { text: current.text.replace(/\\\s*$/, ""), line: current.line };
    else {
      carry = undefined;
      joined.push(current);
    }
  }
  if (carry !== undefined) joined.push(carry);
  return joined;
}

/** The flags in `text` (the Markdown file `file`) that their commands do not take. */
export function checkFlags(file: string, text: string, commands: readonly DocumentedCommand[]): UnknownFlag[] {
  const unknown: UnknownFlag[] = [];
  for (const { text: code, line } of joinedCode(text)) {
    for (const command of commands) {
      const pattern = new RegExp(command.pattern.source, "g");
      for (const match of code.matchAll(pattern)) {
        const rest = code.slice(match.index + match[0].length);
        if (command.usage === undefined) {
          unknown.push({ file, line, command: command.name, flag: "", why: command.missing ?? "no such command" });
          continue;
        }
        for (const flag of flagsAfter(rest))
          if (!lists(command.usage, flag))
            unknown.push({ file, line, command: command.name, flag, why: `${command.name} --help does not list it` });
      }
    }
  }
  return unknown;
}
