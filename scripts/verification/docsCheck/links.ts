import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { headingAnchors, markdownLinks } from "./markdown";

/**
 * Checks every link of a Markdown file as its reader meets it: a relative link must name a file the reader has (one
 * the package ships, for a shipped file; one of the repository otherwise), an absolute link into the repository must
 * name a file of it (the packages' `homepage`/`repository`: what npm's page and an installed package's reader follow),
 * and an anchor must be a heading of the file it points into. Other web links are counted, not fetched (no network
 * in CI).
 */

/** Where a Markdown file is read: within a package (its shipped files) or in the repository. */
export interface LinkContext {
  /** The repository's folder. */
  repo: string;
  /** The repository's web address, e.g. https://github.com/owner/name (its files are under /blob/main/…). */
  repoUrl: string;
  /** For a shipped file: the package's folder and the files it ships (relative to it). */
  shipped?: { root: string; files: ReadonlySet<string> };
}

/** A link that does not resolve. */
export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  why: string;
}

/** What {@link checkLinks} found. */
export interface LinkReport {
  broken: BrokenLink[];
  checked: number;
  /** Web links outside the repository, not fetched. */
  external: number;
}

/** Checks the links of the Markdown file `file` (absolute path). */
export function checkLinks(file: string, context: LinkContext): LinkReport {
  const report: LinkReport = { broken: [], checked: 0, external: 0 };
  const shown = path.relative(context.repo, file);
  const repoPrefix = new RegExp(`^${escape(context.repoUrl)}/(?:blob|tree|raw)/main/([^#?]*)(#.*)?$`);
  for (const { target, line } of markdownLinks(readFileSync(file, "utf8"))) {
    const broken = (why: string): void => void report.broken.push({ file: shown, line, target, why });
    report.checked++;
    if (/^mailto:/.test(target)) continue;
    const inRepo = repoPrefix.exec(target);
    if (inRepo !== null) {
      const why = resolveIn(context.repo, inRepo[1] ?? "", inRepo[2]);
      if (why !== undefined) broken(`${why} in the repository`);
      continue;
    }
    if (target.startsWith(context.repoUrl)) {
      if (!/^(#.*|\/issues(\/.*)?|\/?)$/.test(target.slice(context.repoUrl.length)))
        broken(`links into the repository must name a file under ${context.repoUrl}/blob/main/`);
      continue;
    }
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) {
      report.external++;
      continue;
    }
    const [relative, anchor] = splitAnchor(target);
    if (relative === "") {
      if (anchor !== undefined && !headingAnchors(readFileSync(file, "utf8")).has(anchor))
        broken(`no heading #${anchor} here`);
      continue;
    }
    const resolved = path.resolve(path.dirname(file), decodeURIComponent(relative));
    const shipped = context.shipped;
    if (shipped !== undefined) {
      const inPackage = path.relative(shipped.root, resolved).split(path.sep).join("/");
      const isDir = [...shipped.files].some((name) => name.startsWith(`${inPackage}/`));
      if (!shipped.files.has(inPackage) && !isDir) {
        broken("the package does not ship it: link it absolutely, into the repository");
        continue;
      }
    }
    const why = resolveIn(
      context.repo,
      path.relative(context.repo, resolved),
      anchor === undefined ? undefined : `#${anchor}`,
    );
    if (why !== undefined) broken(why);
  }
  return report;
}

/** Why `relative` (with `#anchor`) does not resolve in `root`; undefined when it does. */
function resolveIn(root: string, relative: string, anchor: string | undefined): string | undefined {
  const full = path.join(root, decodeURIComponent(relative));
  if (!existsSync(full)) return `no such file ${relative}`;
  const name = anchor?.slice(1);
  if (name === undefined || name === "" || statSync(full).isDirectory() || !full.endsWith(".md")) return undefined;
  return headingAnchors(readFileSync(full, "utf8")).has(name) ? undefined : `no heading #${name} in ${relative}`;
}

function splitAnchor(target: string): [string, string | undefined] {
  const at = target.indexOf("#");
  return at === -1 ? [target, undefined] : [target.slice(0, at), target.slice(at + 1)];
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
