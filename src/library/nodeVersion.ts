import { ConfigurationError } from "./errors.js";

/** The oldest Node.js this package runs on: `engines` in package.json. */
const MINIMUM = [22, 12] as const;

/**
 * Throws unless this process runs Node.js 22.12 or later: `engines` in package.json, the oldest Node the package is
 * tested on. Below 22, `Promise.withResolvers` is missing and every term would fail with a TypeError in the logs; this
 * says so once, at start, instead.
 *
 * @throws ConfigurationError naming the Node.js version needed and the one running.
 */
export function assertSupportedNode(version: string = process.versions.node): void {
  const [major = Number.NaN, minor = Number.NaN] = version.split(".").map(Number);
  const [minMajor, minMinor] = MINIMUM;
  if (major > minMajor || (major === minMajor && minor >= minMinor)) return;
  throw new ConfigurationError(
    `azure-leader-coordinator needs Node.js ${minMajor}.${minMinor} or later (22 or 24 on Azure Functions); ` +
      `this process runs Node ${version}.`,
  );
}
