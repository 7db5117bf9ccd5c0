import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { buildDeployPackage } from "../../dev/src/cli/packageCommand";
import { UsageError } from "../../src/cli/flags";

describe("the package command refuses what would make a broken deploy folder, before touching anything", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const project = (files: Record<string, string>): string => {
    dir = mkdtempSync(path.join(tmpdir(), "package-script-"));
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    return dir;
  };

  it("without the build output it says to build first", () => {
    const root = project({ "package.json": JSON.stringify({ main: "dist/functions/index.js" }) });
    expect(() => buildDeployPackage(root, path.join(root, ".deploy"))).toThrow(UsageError);
    expect(() => buildDeployPackage(root, path.join(root, ".deploy"))).toThrow(
      /does not exist: build your app first \(e\.g\. npm run build\)/,
    );
  });

  it("without a lockfile or a host.json it says what is missing", () => {
    const root = project({ "package.json": JSON.stringify({ main: "index.js" }), "index.js": "" });
    expect(() => buildDeployPackage(root, path.join(root, ".deploy"))).toThrow(/has no package-lock\.json/);
    writeFileSync(path.join(root, "package-lock.json"), "{}");
    expect(() => buildDeployPackage(root, path.join(root, ".deploy"))).toThrow(/has no host\.json/);
  });

  it("it never empties the project folder itself", () => {
    const root = project({ "package.json": JSON.stringify({ main: "package.json" }) });
    expect(() => buildDeployPackage(root, root)).toThrow("--out must not be the project folder.");
  });
});
