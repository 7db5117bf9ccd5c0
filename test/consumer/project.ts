import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";

/** The repository: what `npm pack` packs. */
export const REPO = resolve(__dirname, "..", "..");
const run = promisify(execFile);

/** The version this repo's lockfile pins for a package (what `npm ci` installed, so the npm cache has it). */
export function pinned(name: string): string {
  const manifest = JSON.parse(readFileSync(join(REPO, "node_modules", name, "package.json"), "utf8")) as {
    version: string;
  };
  return manifest.version;
}

/** Runs a command; its output on failure says what went wrong. */
export async function sh(file: string, args: string[], cwd: string, timeoutMs = 240_000): Promise<string> {
  try {
    const { stdout } = await run(file, args, {
      cwd,
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
      env: process.env,
    });
    return stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${file} ${args.join(" ")} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ""}\n${failed.stderr ?? ""}`,
    );
  }
}

/**
 * A user's project outside the repo: `fixture` copied into a fresh temporary folder, the `tarballs` installed there
 * with `packages` (each at the version this repo pins, so npm finds them in its cache), as `npm install` does for a
 * user. Returns the project's folder; {@link removeProject} deletes it.
 */
export async function installProject(
  fixture: string,
  tarballs: string | readonly string[],
  packages: string[],
): Promise<string> {
  const project = join(mkdtempSync(join(tmpdir(), "consumer-")), "app");
  cpSync(fixture, project, { recursive: true });
  const versions = packages.map((name) => `${name}@${pinned(name)}`);
  await sh(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--no-package-lock", ...[tarballs].flat(), ...versions],
    project,
  );
  return project;
}

/** Compiles the project with this repo's TypeScript and the project's own tsconfig (or `config`). */
export async function compile(project: string, config = "tsconfig.json"): Promise<void> {
  await sh(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", config], project);
}

/** How long deleting a project may take: some 10,000 files, slow on a busy machine. */
export const REMOVE_TIMEOUT_MS = 300_000;

/** Deletes a project {@link installProject} made (give the hook {@link REMOVE_TIMEOUT_MS}). */
export async function removeProject(project: string): Promise<void> {
  if (project !== "") await rm(dirname(project), { recursive: true, force: true });
}
