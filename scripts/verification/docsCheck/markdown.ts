/**
 * What the docs checks read of a Markdown file: its links (outside code), its code (fenced blocks and inline spans,
 * line by line), and its headings' anchors as GitHub makes them.
 */

/** A link or image target of a Markdown file, with the line it is on. */
export interface MarkdownLink {
  target: string;
  line: number;
}

/** A piece of code: a line of a fenced block, or an inline code span. */
export interface CodeLine {
  text: string;
  line: number;
}

/** The file's lines, each marked whether it is inside a fenced code block. */
function lines(text: string): { text: string; line: number; fenced: boolean; fence: boolean }[] {
  let inFence = false;
  return text.split("\n").map((line, index) => {
    const fence = /^\s*(```|~~~)/.test(line);
    if (fence) inFence = !inFence;
    return { text: line, line: index + 1, fenced: inFence && !fence, fence };
  });
}

/** A line without its inline code spans (links inside code are not links). */
function withoutCode(line: string): string {
  return line.replace(/`[^`]*`/g, "");
}

/** Every link and image target outside code: inline `[text](target)`, and reference definitions `[label]: target`. */
export function markdownLinks(text: string): MarkdownLink[] {
  const found: MarkdownLink[] = [];
  for (const { text: raw, line, fenced, fence } of lines(text)) {
    if (fenced || fence) continue;
    const plain = withoutCode(raw);
    for (const match of plain.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
      found.push({ target: match[1] ?? "", line });
    const definition = /^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s+".*")?\s*$/.exec(plain);
    if (definition !== null) found.push({ target: definition[1] ?? "", line });
  }
  return found;
}

/** Every line of a fenced code block, and every inline code span elsewhere. */
export function codeLines(text: string): CodeLine[] {
  const found: CodeLine[] = [];
  for (const { text: raw, line, fenced, fence } of lines(text)) {
    if (fence) continue;
    if (fenced) found.push({ text: raw, line });
    else for (const match of raw.matchAll(/`([^`]+)`/g)) found.push({ text: match[1] ?? "", line });
  }
  return found;
}

/** The anchors GitHub gives the file's headings (`## Run and test your own app` → `run-and-test-your-own-app`). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  for (const { text: raw, fenced, fence } of lines(text)) {
    if (fenced || fence) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(raw);
    if (heading === null) continue;
    const rendered = (heading[1] ?? "")
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
      .replace(/`([^`]*)`/g, "$1")
      .replace(/<[^>]+>/g, "");
    const slug = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const seen = counts.get(slug) ?? 0;
    counts.set(slug, seen + 1);
    anchors.add(seen === 0 ? slug : `${slug}-${seen}`);
  }
  return anchors;
}
