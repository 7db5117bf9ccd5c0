/**
 * The TypeScript code of the docs (issue 45): every fenced block marked `ts` or `typescript` is compiled against the
 * packages, as a user would paste it into a project that installed them — with the repository's strict compiler
 * options, and the packages' names resolved to their sources as `tsconfig.json` maps them (no build needed).
 *
 * A block is a module of its own (`.mts`: ESM, top-level `await` allowed). An HTML comment right before its fence
 * (blank lines between are allowed) changes that:
 * - `<!-- docs-check: fragment -->` — not compiled: a piece of a larger program. Keep these few; the check counts them.
 * - `<!-- docs-check: continues -->` — the block goes on from the Markdown file's previous compiled block, in the
 *   same module (a tutorial's steps).
 * - `<!-- docs-check: file src/kinds.ts -->` — the block is the file of that name in the page's project, so a later
 *   block can import it (`./kinds.js`); a `.ts` name is CommonJS, as in the Functions template's project.
 * - `<!-- docs-check: assume declare const jpeg: Uint8Array; -->` — declarations the block takes as given (the
 *   reader's own data), compiled before it and not shown.
 */
import path from "node:path";

/** A compiled unit: one module of a page's project, made of one block or of a block and its continuations. */
export interface BlockModule {
  /** The Markdown file, relative to the repository. */
  file: string;
  /** The module's file name within the page's project (`block-L12.mts`, or the name a `file` marker gave). */
  name: string;
  /** The module's text. */
  code: string;
  /** The Markdown line of each line of `code` (1-based), for the diagnostics. */
  lines: number[];
}

/** What {@link typeScriptModules} found in a file. */
export interface ExtractedBlocks {
  modules: BlockModule[];
  /** Blocks marked `fragment` (not compiled): the Markdown line of each fence. */
  fragments: number[];
  /** Markers that could not be used, with why. */
  problems: { file: string; line: number; why: string }[];
}

const FENCE = /^\s*(```|~~~)\s*([\w+-]*)/;
const MARKER = /^<!--\s*docs-check:\s*([\s\S]*?)\s*-->$/;

/** The comments right before line `index` (blank lines between allowed), nearest last, each with its first line. */
function markersBefore(lines: readonly string[], index: number): { text: string; line: number }[] {
  const found: { text: string; line: number }[] = [];
  let at = index - 1;
  for (;;) {
    while (at >= 0 && (lines[at] ?? "").trim() === "") at--;
    if (at < 0 || !(lines[at] ?? "").trim().endsWith("-->")) return found.reverse();
    let start = at;
    while (start >= 0 && !(lines[start] ?? "").trimStart().startsWith("<!--")) start--;
    if (start < 0) return found.reverse();
    const comment = lines
      .slice(start, at + 1)
      .join("\n")
      .trim();
    const marker = MARKER.exec(comment);
    if (marker === null) return found.reverse();
    found.push({ text: marker[1] ?? "", line: start + 1 });
    at = start - 1;
  }
}

/** The TypeScript blocks of a Markdown file (`file`, relative to the repository), grouped into modules. */
export function typeScriptModules(file: string, text: string): ExtractedBlocks {
  const result: ExtractedBlocks = { modules: [], fragments: [], problems: [] };
  const lines = text.split("\n");
  let previous: BlockModule | undefined;
  for (let index = 0; index < lines.length; index++) {
    const fence = FENCE.exec(lines[index] ?? "");
    if (fence === null) continue;
    const marker = fence[1] ?? "```";
    const language = (fence[2] ?? "").toLowerCase();
    let end = index + 1;
    while (end < lines.length && !(lines[end] ?? "").trimStart().startsWith(marker)) end++;
    const body = lines.slice(index + 1, end);
    const bodyLines = body.map((_, offset) => index + 2 + offset);
    const fenceLine = index + 1;
    index = end;
    const markers = markersBefore(lines, fenceLine - 1);
    if (language !== "ts" && language !== "typescript") {
      for (const { text: directive, line } of markers)
        result.problems.push({
          file,
          line,
          why: `docs-check marker "${directive}" before a block that is not TypeScript: only ts blocks take them`,
        });
      continue;
    }
    let mode: "module" | "fragment" | "continues" = "module";
    let name: string | undefined;
    const assumed: { code: string[]; line: number }[] = [];
    for (const { text: directive, line } of markers) {
      const [word = "", ...rest] = directive.split(/\s+/);
      const argument = directive.slice(word.length).trim();
      if (word === "fragment" && rest.length === 0) mode = "fragment";
      else if (word === "continues" && rest.length === 0) mode = "continues";
      else if (word === "file" && /^[\w./-]+\.(m?ts)$/.test(argument) && !argument.includes("..")) name = argument;
      else if (word === "assume" && argument !== "") assumed.push({ code: argument.split("\n"), line });
      else
        result.problems.push({
          file,
          line,
          why: `unknown docs-check marker "${directive}": fragment, continues, file NAME.ts or assume DECLARATIONS`,
        });
    }
    if (mode === "fragment") {
      result.fragments.push(fenceLine);
      continue;
    }
    const preludeCode = assumed.flatMap((entry) => entry.code);
    const preludeLines = assumed.flatMap((entry) => entry.code.map(() => entry.line));
    if (mode === "continues") {
      if (previous === undefined) {
        result.problems.push({ file, line: fenceLine, why: "a block marked continues follows no compiled block" });
        continue;
      }
      previous.code += `\n${[...preludeCode, ...body].join("\n")}`;
      previous.lines.push(...preludeLines, ...bodyLines);
      continue;
    }
    previous = {
      file,
      name: name ?? `block-L${fenceLine}.mts`,
      code: [...preludeCode, ...body].join("\n"),
      lines: [...preludeLines, ...bodyLines],
    };
    result.modules.push(previous);
  }
  return result;
}

/** Where a page's modules live while they are compiled: a folder of their own, under the repository's. */
export function moduleFileName(repo: string, module: Pick<BlockModule, "file" | "name">): string {
  return path.join(repo, ".docs-check", module.file.replace(/[^\w-]/g, "_"), module.name);
}
