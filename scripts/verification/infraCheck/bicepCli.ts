import { execFile } from "node:child_process";
import { accessSync, chmodSync, constants, copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";

/**
 * The Bicep compiler the project uses (issue 34): `bicep` from PATH when the user has one (`az bicep install` puts it
 * in ~/.azure/bin; put that on PATH), else the NuGet package `Azure.Bicep.CommandLine.linux-x64` pinned in
 * `bicep-cli.csproj`, restored with the machine's `dotnet` into the git-ignored `.bicep-cli/`. Nothing is downloaded
 * from anywhere but NuGet.
 */

const run = promisify(execFile);

/** Repository root (this file is scripts/verification/infraCheck/bicepCli.ts). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..", "..");
/** The project that pins the compiler. */
const PROJECT = path.join(__dirname, "bicep-cli.csproj");
/** Where the pinned compiler is restored (git-ignored). */
export const RESTORE_DIR = path.join(REPO_ROOT, ".bicep-cli");
const PACKAGE_ID = "Azure.Bicep.CommandLine.linux-x64";

/** What to do when neither a `bicep` on PATH nor `dotnet` is there. */
export const HOW_TO_GET_BICEP =
  "The Bicep compiler is needed: install the .NET SDK (`dotnet`, which restores the pinned compiler from NuGet the " +
  "first time: npm run infra:check), or put a `bicep` on PATH (`az bicep install`, then add ~/.azure/bin to PATH).";

/** The compiler cannot be had on this machine; the message says how to get it. */
export class BicepUnavailableError extends Error {
  override readonly name = "BicepUnavailableError";
}

/** A usable compiler. */
export interface BicepCli {
  /** The executable. */
  readonly path: string;
  /** Its `--version` line (`Bicep CLI version 0.49.2 (b34271ac51)`), or the pinned package's version. */
  readonly version: string;
  /** Where it came from. */
  readonly source: "PATH" | "NuGet";
}

/** The package version `bicep-cli.csproj` pins (its `Version="[x.y.z]"`). */
export function pinnedVersion(): string {
  const match = /Include="Azure\.Bicep\.CommandLine\.linux-x64" Version="\[([0-9.]+)\]"/.exec(
    readFileSync(PROJECT, "utf8"),
  );
  if (match?.[1] === undefined) throw new Error(`${PROJECT} pins no ${PACKAGE_ID} version`);
  return match[1];
}

/** Where the restored package keeps the executable. */
export function restoredPath(version = pinnedVersion()): string {
  return path.join(RESTORE_DIR, "packages", PACKAGE_ID.toLowerCase(), version, "tools", "bicep");
}

/** The first `name` on PATH that is an executable file, if any. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

async function versionOf(executable: string): Promise<string> {
  const { stdout } = await run(executable, ["--version"]);
  return stdout.trim();
}

/**
 * Restores the pinned package with `dotnet restore` (NuGet only) unless it is there already, and returns the
 * executable.
 *
 * @throws BicepUnavailableError when there is no `dotnet`.
 */
export async function restoreBicep(log: (line: string) => void = () => undefined): Promise<string> {
  const executable = restoredPath();
  if (existsSync(executable)) return executable;
  const dotnet = onPath("dotnet");
  if (dotnet === undefined) throw new BicepUnavailableError(`No bicep on PATH and no dotnet. ${HOW_TO_GET_BICEP}`);
  mkdirSync(RESTORE_DIR, { recursive: true });
  copyFileSync(PROJECT, path.join(RESTORE_DIR, "bicep-cli.csproj"));
  log(`Restoring ${PACKAGE_ID} ${pinnedVersion()} from NuGet into ${path.relative(REPO_ROOT, RESTORE_DIR)}/ …`);
  await run(dotnet, ["restore", "bicep-cli.csproj", "--packages", "packages", "--nologo", "--verbosity", "quiet"], {
    cwd: RESTORE_DIR,
    env: { ...process.env, DOTNET_NOLOGO: "1", DOTNET_CLI_TELEMETRY_OPTOUT: "1" },
  });
  if (!existsSync(executable)) throw new Error(`dotnet restore finished but left no ${executable}`);
  // NuGet keeps the mode the package was packed with; make sure the owner may run it.
  chmodSync(executable, 0o755);
  return executable;
}

/**
 * The compiler to use: `bicep` on PATH, else the pinned one (restored on first use).
 *
 * @throws BicepUnavailableError when neither is possible, saying how to get one.
 */
export async function findBicep(log?: (line: string) => void): Promise<BicepCli> {
  const fromPath = onPath("bicep");
  if (fromPath !== undefined) return { path: fromPath, version: await versionOf(fromPath), source: "PATH" };
  const restored = await restoreBicep(log);
  // The package's version is the compiler's: no need to start it (a second or more) just to ask.
  return { path: restored, version: `Bicep CLI version ${pinnedVersion()} (NuGet ${PACKAGE_ID})`, source: "NuGet" };
}
