import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { headingAnchors } from "./markdown";

/**
 * The code's pointers into the docs resolve (issue 45): every `docs/….md` (with its `#anchor`) that a source file,
 * a message, a test or a template names is a page of the repository, with that heading. A page that moves takes its
 * pointers along, or this check names each one left behind.
 */

/** A pointer into the docs that does not resolve. */
export interface DeadMention {
  file: string;
  line: number;
  mention: string;
  why: string;
}

const MENTION = /(?<![\w/.-])docs\/[\w./-]*?[\w-]\.md(?:#[\w-]+)?/g;

/** Each `docs/….md` mention of `text` (the file `file`, relative to the repository at `repo`) that does not resolve. */
export function checkCodeMentions(repo: string, file: string, text: string): DeadMention[] {
  const dead: DeadMention[] = [];
  text.split("\n").forEach((line, index) => {
    for (const match of line.matchAll(MENTION)) {
      const [page = "", anchor] = match[0].split("#");
      const full = path.join(repo, page);
      const why = !existsSync(full)
        ? `no such page ${page}`
        : anchor !== undefined && !headingAnchors(readFileSync(full, "utf8")).has(anchor)
          ? `no heading #${anchor} in ${page}`
          : undefined;
      if (why !== undefined) dead.push({ file, line: index + 1, mention: match[0], why });
    }
  });
  return dead;
}
