import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildDeployPackage } from "../../scripts/tools/package";
import { UsageError } from "../../src/cli/flags";

describe("npm run package refuses what would make a broken package, before touching anything", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("without the build output it says to build first", () => {
    dir = mkdtempSync(path.join(tmpdir(), "package-script-"));
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ main: "dist/functions/index.js" }));
    expect(() => buildDeployPackage(dir, path.join(dir, ".deploy"))).toThrow(UsageError);
    expect(() => buildDeployPackage(dir, path.join(dir, ".deploy"))).toThrow(/does not exist: run npm run build first/);
  });

  it("it never empties the project folder itself", () => {
    dir = mkdtempSync(path.join(tmpdir(), "package-script-"));
    writeFileSync(path.join(dir, "package.json"), JSON.stringify({ main: "package.json" }));
    expect(() => buildDeployPackage(dir, dir)).toThrow("--out must not be the project folder.");
  });
});
