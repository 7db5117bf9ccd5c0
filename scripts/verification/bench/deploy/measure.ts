import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { sizeOf } from "../../../../dev/src/cli/packageCommand";

/**
 * How large a production install is (issue 44): the bytes and files under a folder's node_modules, and its top-level
 * packages (`node_modules/<name>` and `node_modules/@scope/<name>`), as the issue counted them.
 */
export interface InstallSize {
  /** Bytes of every file under node_modules. */
  bytes: number;
  files: number;
  /** Top-level packages (a scope's packages each count). */
  topLevelPackages: number;
  /** Whether node_modules/azurite is there. */
  azurite: boolean;
}

/** The size of `dir`'s node_modules. */
export function installSize(dir: string): InstallSize {
  const modules = path.join(dir, "node_modules");
  const { bytes, files } = sizeOf(modules);
  let topLevelPackages = 0;
  for (const entry of readdirSync(modules, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    if (entry.name.startsWith("@"))
      topLevelPackages += readdirSync(path.join(modules, entry.name)).filter((name) => !name.startsWith(".")).length;
    else topLevelPackages++;
  }
  return { bytes, files, topLevelPackages, azurite: existsSync(path.join(modules, "azurite")) };
}

/** "301.2 MB, 254 packages" (MB = 10^6 bytes, as `du --si` and the issue say). */
export function describeSize(size: InstallSize): string {
  return `${(size.bytes / 1e6).toFixed(1)} MB, ${size.topLevelPackages} top-level packages, ${size.files.toLocaleString("en-US")} files${size.azurite ? ", azurite included" : ""}`;
}
