import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { REPO, sh } from "./project";

/** What `npm pack` made, shared by every consumer test file of the run (`inject("packed")`). */
export interface Packed {
  /** The tarball's absolute path, to `npm install` in a user's project. */
  tarball: string;
  /** The paths it holds, relative to the package root (`dist/esm/index.js`, `package.json`, …). */
  files: string[];
}

declare module "vitest" {
  export interface ProvidedContext {
    packed: Packed;
  }
}

/**
 * Vitest's global setup of the consumer project: packs the package once per run, as a publisher would (`npm pack`,
 * whose prepack builds it), and hands the tarball to every consumer test file. Packing builds the whole package
 * (about half a minute), so no test file packs its own. Vitest runs it only when a consumer test file is selected.
 */
export async function setup(project: TestProject): Promise<() => void> {
  const work = mkdtempSync(join(tmpdir(), "consumer-pack-"));
  const [info] = JSON.parse(await sh("npm", ["pack", "--json", "--pack-destination", work], REPO)) as {
    filename: string;
    files: { path: string }[];
  }[];
  if (info === undefined) throw new Error("npm pack printed nothing");
  project.provide("packed", { tarball: join(work, info.filename), files: info.files.map((file) => file.path) });
  return () => {
    rmSync(work, { recursive: true, force: true });
  };
}
