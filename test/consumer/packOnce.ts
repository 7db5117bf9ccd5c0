import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { REPO, sh } from "./project";

/** One tarball `npm pack` made. */
export interface Tarball {
  /** Its absolute path, to `npm install` in a user's project. */
  tarball: string;
  /** The paths it holds, relative to the package root (`dist/esm/index.js`, `package.json`, …). */
  files: string[];
}

/**
 * What `npm pack` made, shared by every consumer test file of the run (`inject("packed")`): the runtime package
 * (`tarball`, `files`) and the development package (`dev`).
 */
export interface Packed extends Tarball {
  dev: Tarball;
}

declare module "vitest" {
  export interface ProvidedContext {
    packed: Packed;
  }
}

/** Packs one package into `work` (`workspace`: the development package's folder; none: the runtime at the root). */
async function pack(work: string, workspace?: string): Promise<Tarball> {
  // The runtime's prepack builds both packages (npm run build), so the development package is packed as built.
  const args = workspace === undefined ? [] : ["--workspace", workspace, "--ignore-scripts"];
  const [info] = JSON.parse(await sh("npm", ["pack", "--json", "--pack-destination", work, ...args], REPO)) as {
    filename: string;
    files: { path: string }[];
  }[];
  if (info === undefined) throw new Error(`npm pack ${args.join(" ")} printed nothing`);
  return { tarball: join(work, info.filename), files: info.files.map((file) => file.path) };
}

/**
 * Vitest's global setup of the consumer project: packs both packages once per run, as a publisher would (`npm pack`,
 * whose prepack builds them), and hands the tarballs to every consumer test file. Packing builds everything (about a
 * minute), so no test file packs its own. Vitest runs it only when a consumer test file is selected.
 */
export async function setup(project: TestProject): Promise<() => void> {
  const work = mkdtempSync(join(tmpdir(), "consumer-pack-"));
  const runtime = await pack(work);
  const dev = await pack(work, "dev");
  project.provide("packed", { ...runtime, dev });
  return () => {
    rmSync(work, { recursive: true, force: true });
  };
}
