import { readFileSync } from "node:fs";
import path from "node:path";

/** One public entry of a package: what api-extractor reads and the report it writes. */
export interface ApiEntry {
  /** The package's name (`azure-leader-coordinator`, `azure-leader-coordinator-dev`). */
  packageName: string;
  /** The entry's subpath, as users import it (`.`, `./testing`). */
  subpath: string;
  /** The entry's source, relative to the repository (`src/index.ts`). */
  source: string;
  /** The report's name without `.api.md`: the package's name, then the subpath's with `-` (`…-leader-election`). */
  reportName: string;
  /** The package's package.json, absolute. */
  packageJsonPath: string;
}

/** The package folders, relative to the repository: the runtime at the root, the development package in dev/. */
export const PACKAGE_FOLDERS = [".", "dev"] as const;

/**
 * Entries that carry no compatibility promise, and so no report: `./internal` is what the development package builds
 * on, and that package requires the runtime at exactly its own version (src/internal.ts).
 */
const UNREVIEWED_SUBPATHS = new Set(["./internal", "./package.json"]);

/** The reviewed entries of the packages in `folders`, from each package.json's `"tshy"."exports"`. */
export function apiEntries(repo: string, folders: readonly string[] = PACKAGE_FOLDERS): ApiEntry[] {
  return folders.flatMap((folder) => {
    const packageJsonPath = path.join(repo, folder, "package.json");
    const manifest = JSON.parse(readFileSync(packageJsonPath, "utf8")) as {
      name: string;
      tshy: { exports: Record<string, string> };
    };
    return Object.entries(manifest.tshy.exports)
      .filter(([subpath]) => !UNREVIEWED_SUBPATHS.has(subpath))
      .map(([subpath, source]) => ({
        packageName: manifest.name,
        subpath,
        source: path.posix.join(folder, source),
        reportName: subpath === "." ? manifest.name : `${manifest.name}-${subpath.slice(2).replaceAll("/", "-")}`,
        packageJsonPath,
      }));
  });
}
