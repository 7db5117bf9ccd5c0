import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { APP_SETTING_NAMES, CONNECTION_SETTINGS, settingsSchema } from "../../src/app/settings";
import { formatDiagnostic } from "../../scripts/verification/infraCheck/diagnostics";
import { type Snapshot, describeCompiled, ofType, only, roleAssignments, shortId } from "../infra/compiled";
import { REPO_ROOT } from "../infra/paths";
import { type CompiledUserProject, USER_APP_NAME, compileUserProject } from "../infra/userApp";

/**
 * Issue 33, "Deploy your own app": a project outside the repository references the module the package ships
 * (bicep/coordinator.bicep) from node_modules, as docs/how-to/deploy.md shows, and the real compiler builds it and
 * evaluates what it deploys: the containers and queues the coordinator needs, the app identity's roles on them, and
 * the app settings the code reads. The module comes from the packed tarball (`inject("packed")`), extracted as npm
 * installs it, so a module left out of the package's `files` fails here.
 */

describeCompiled("a user's own app deployed with the shipped module", () => {
  let compiled: CompiledUserProject | undefined;
  const extracted = mkdtempSync(path.join(os.tmpdir(), "packed-"));
  beforeAll(async () => {
    execFileSync("tar", ["-xzf", inject("packed").tarball, "-C", extracted]);
    compiled = await compileUserProject(path.join(extracted, "package"));
  }, 600_000);
  afterAll(() => {
    if (compiled !== undefined) rmSync(compiled.project, { recursive: true, force: true });
    rmSync(extracted, { recursive: true, force: true });
  });
  const user = (): CompiledUserProject => {
    if (compiled === undefined) throw new Error("the user's project was not compiled");
    return compiled;
  };
  const snapshot = (): Snapshot =>
    JSON.parse(readFileSync(path.join(user().outDir, "snapshots", "app.snapshot.json"), "utf8")) as Snapshot;

  it("compiles outside the repository with no error and no warning (Bicep's default rules)", () => {
    expect(path.relative(REPO_ROOT, user().project)).toMatch(/^\.\./);
    expect(user().diagnostics.map(formatDiagnostic)).toEqual([]);
    expect(user().failedSteps).toEqual([]);
  });

  it("creates the coordinator's containers and queues in the coordination account, poison queues included", () => {
    const defaults = settingsSchema.parse({});
    const containers = ofType(snapshot(), "Microsoft.Storage/storageAccounts/blobServices/containers")
      .filter((container) => container.name.startsWith("stco"))
      .map((container) => container.name.split("/")[2]);
    expect(containers).toEqual([
      defaults.LEASE_CONTAINER,
      defaults.STATE_CONTAINER,
      defaults.INPUT_CONTAINER,
      defaults.SYSTEM_CONTAINER,
      "reports", // the page's outputContainers: what its task kinds write
    ]);
    expect(
      ofType(snapshot(), "Microsoft.Storage/storageAccounts/queueServices/queues").map(
        (queue) => queue.name.split("/")[2],
      ),
    ).toEqual([
      defaults.WORK_QUEUE,
      `${defaults.WORK_QUEUE}-poison`,
      defaults.RESULTS_QUEUE,
      `${defaults.RESULTS_QUEUE}-poison`,
      defaults.WAKE_QUEUE,
    ]);
  });

  it("grants the app's identity the coordinator's least-privilege roles, scoped to those containers (its kinds' outputs too) and the account", () => {
    const coordination = ofType(snapshot(), "Microsoft.Storage/storageAccounts").find((account) =>
      account.name.startsWith("stco"),
    );
    const account = `Microsoft.Storage/storageAccounts/${coordination?.name ?? "?"}`;
    const grants = roleAssignments(snapshot())
      .filter((grant) => shortId(grant.scope).startsWith(account))
      .map(
        (grant) => `${shortId(grant.scope).replace(account, "<coordination>")} <- ${grant.principal}: ${grant.roleId}`,
      )
      .sort();
    const identity = `identity:id-${USER_APP_NAME}`;
    expect(grants).toEqual(
      [
        `<coordination> <- ${identity}: 974c5e8b-45b9-4653-ba55-5f855dd0fb88`, // Storage Queue Data Contributor
        `<coordination>/blobServices/default/containers/coordinator-state <- ${identity}: ba92f5b4-2d11-453d-a403-e96b0029c9fe`,
        `<coordination>/blobServices/default/containers/coordinator-system <- ${identity}: ba92f5b4-2d11-453d-a403-e96b0029c9fe`,
        `<coordination>/blobServices/default/containers/job-inputs <- ${identity}: 2a2b9908-6ea1-4ae2-8e65-a410df84e7d1`,
        `<coordination>/blobServices/default/containers/leases <- ${identity}: ba92f5b4-2d11-453d-a403-e96b0029c9fe`,
        `<coordination>/blobServices/default/containers/reports <- ${identity}: ba92f5b4-2d11-453d-a403-e96b0029c9fe`,
      ].sort(),
    );
  });

  it("gives the app the settings the code reads for its storage, identity-based, with its identity's client id", () => {
    const settings = only(snapshot(), "Microsoft.Web/sites/config").properties ?? {};
    const storageSettings = APP_SETTING_NAMES.filter(
      (name) => name.startsWith(`${CONNECTION_SETTINGS.coordination}__`) || /_(CONTAINER|QUEUE)$/.test(name),
    );
    for (const name of storageSettings) expect(settings, name).toHaveProperty(name);
    const prefix = CONNECTION_SETTINGS.coordination;
    expect(settings[`${prefix}__credential`]).toBe("managedidentity");
    expect(settings[`${prefix}__clientId`]).toMatch(
      new RegExp(`userAssignedIdentities/id-${USER_APP_NAME}'.*\\.clientId\\]$`),
    );
    expect(settings[`${prefix}__blobServiceUri`]).toMatch(
      /storageAccounts\/stco[a-z0-9]+'.*\.primaryEndpoints\.blob\]$/,
    );
    expect(settings[`${prefix}__queueServiceUri`]).toMatch(
      /storageAccounts\/stco[a-z0-9]+'.*\.primaryEndpoints\.queue\]$/,
    );
    expect(settings).toMatchObject({ LEASE_CONTAINER: "leases", WAKE_QUEUE: "coordinator-wake" });
  });
});
