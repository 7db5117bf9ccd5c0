import path from "node:path";

/** Repository root (this file is test/infra/paths.ts). */
export const REPO_ROOT = path.resolve(__dirname, "..", "..");
/** The deployable templates. */
export const INFRA_DIR = path.join(REPO_ROOT, "infra");
/** The module the package ships for users' own apps. */
export const SHIPPED_BICEP_DIR = path.join(REPO_ROOT, "bicep");
