import { execFile } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { useAzurite } from "../support/azuriteFixture";
import { compile, installProject, removeProject, REMOVE_TIMEOUT_MS } from "./project";

/**
 * ESM and CommonJS apps each get the same `@azure/*` classes as the package (issue 33): the packed package installed
 * with the app's own `@azure/storage-blob` and `@azure/core-rest-pipeline`, and the same app code as a
 * `"type": "module"` package and as a CommonJS one (two folders of one install, so npm installs once), each compiled
 * by its own tsc (NodeNext, libraries checked) and run against Azurite. The package's blob client must type-check as
 * the app's own `BlobServiceClient`, and a 409 from it must be `instanceof` the `RestError` the app imports — else the
 * blob-digest example's conflict check rethrows every redelivery.
 */

const FIXTURE = resolve(__dirname, "sdk-app");
const run = promisify(execFile);

describe("the package's storage clients in a user's app with its own @azure/storage-blob", () => {
  const storage = useAzurite();
  let project = "";

  beforeAll(async () => {
    project = await installProject(FIXTURE, inject("packed").tarball, [
      "@azure/storage-blob",
      "@azure/core-rest-pipeline",
      "@types/node",
    ]);
  }, 600_000);

  afterAll(() => removeProject(project), REMOVE_TIMEOUT_MS);

  describe.each([
    { kind: "ESM", type: "module", loads: /from "azure-leader-coordinator"/ },
    { kind: "CommonJS", type: "commonjs", loads: /require\("azure-leader-coordinator"\)/ },
  ])("as $kind", ({ type, loads }) => {
    let app = "";
    let compiled: Error | undefined;

    beforeAll(async () => {
      app = join(project, type);
      mkdirSync(app);
      writeFileSync(join(app, "package.json"), JSON.stringify({ name: `consumer-${type}`, private: true, type }));
      cpSync(join(FIXTURE, "tsconfig.json"), join(app, "tsconfig.json"));
      cpSync(join(FIXTURE, "src"), join(app, "src"), { recursive: true });
      // tsc emits even when the types do not check: the run below shows what the app does at run time.
      compiled = await compile(app).then(
        () => undefined,
        (error: unknown) => error as Error,
      );
    }, 300_000);

    it("compiles: the package's blob client is assignable to the app's own BlobServiceClient", () => {
      expect(compiled?.message).toBeUndefined();
      expect(readFileSync(join(app, "dist", "main.js"), "utf8")).toMatch(loads);
    });

    it("a 409 from the package's client is instanceof the app's RestError (storage-blob's and core-rest-pipeline's)", async () => {
      const { stdout, stderr } = await run(process.execPath, [join("dist", "main.js"), `twice-${type}`], {
        cwd: app,
        env: { ...process.env, COORDINATION_STORAGE: storage.azurite.connectionString },
      });
      expect(stderr).toBe("");
      expect(JSON.parse(stdout)).toEqual({ conflict: true, statusCode: 409, restError: true, pipelineRestError: true });
    });
  });
});
