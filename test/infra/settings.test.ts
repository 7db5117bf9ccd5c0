import { expect, it } from "vitest";
import {
  APP_SETTING_NAMES,
  CONNECTION_SETTINGS,
  MAX_POISONED_QUEUE_NAME_LENGTH,
  readSettings,
  settingsSchema,
} from "../../src/app/settings";
import { NODE_WORKER_ARGUMENTS } from "../../dev/src/local/instances";
import { type Snapshot, describeCompiled, ofType, readSnapshot, readTemplate, useCompiledInfra } from "./compiled";

/**
 * One source of truth for app settings: src/app/settings.ts. These tests read the settings the compiler evaluates for
 * each app (`bicep snapshot` of main.bicepparam, and of a variant with every container and queue renamed and two
 * apps) and prove they are exactly the names the code reads, with the code's defaults, and that the containers and
 * queues those settings name are the ones created.
 *
 * The rule that tells host settings from app settings: a name is the Functions host's (or the platform's) when it
 * starts with one of HOST_SETTING_PREFIXES. Every other name must be one the code reads, and every name the code reads
 * must be set.
 */
const HOST_SETTING_PREFIXES = [
  "AzureWebJobs",
  "AzureFunctionsJobHost__",
  "APPLICATIONINSIGHTS_",
  "FUNCTIONS_",
  "WEBSITE_",
  "languageWorkers__",
] as const;

const isHostSetting = (name: string): boolean => HOST_SETTING_PREFIXES.some((prefix) => name.startsWith(prefix));

/** Each app's settings, in app order. */
function appSettings(snapshot: Snapshot): Record<string, unknown>[] {
  return ofType(snapshot, "Microsoft.Web/sites/config").map((config) => {
    expect(config.name).toMatch(/\/appsettings$/);
    return config.properties ?? {};
  });
}

/** The names of the containers and queues a snapshot creates. */
function created(snapshot: Snapshot, type: "containers" | "queues"): string[] {
  const full =
    type === "containers"
      ? "Microsoft.Storage/storageAccounts/blobServices/containers"
      : "Microsoft.Storage/storageAccounts/queueServices/queues";
  const coordination = String(snapshot.outputs.coordinationStorageAccountName);
  return ofType(snapshot, full)
    .filter((resource) => resource.name.startsWith(`${coordination}/`))
    .map((resource) => resource.name.split("/").at(-1) ?? "");
}

/** The code's settings as they would read what is deployed (values the compiler cannot know yet left out). */
function codeSettingsOf(settings: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.keys(settingsSchema.shape).map((name) => [name, String(settings[name])]));
}

describeCompiled("app settings: what Bicep deploys and src/app/settings.ts are the same set", () => {
  const infra = useCompiledInfra();
  const main = (): Record<string, unknown> => {
    const [settings] = appSettings(readSnapshot(infra(), "main"));
    if (settings === undefined) throw new Error("main.bicep deploys no appsettings");
    return settings;
  };

  it("the code's names are unique and none looks like a host setting (the prefix rule cannot hide one)", () => {
    expect(new Set(APP_SETTING_NAMES).size).toBe(APP_SETTING_NAMES.length);
    expect(APP_SETTING_NAMES.filter(isHostSetting)).toEqual([]);
  });

  it("the app's own names equal APP_SETTING_NAMES exactly", () => {
    const names = Object.keys(main()).filter((name) => !isHostSetting(name));
    expect(names.sort()).toEqual([...APP_SETTING_NAMES].sort());
  });

  it("the host settings are only identity-based storage and Entra-authenticated Application Insights", () => {
    expect(Object.keys(main()).filter(isHostSetting).sort()).toEqual([
      "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
      "APPLICATIONINSIGHTS_CONNECTION_STRING",
      "AzureWebJobsStorage__blobServiceUri",
      "AzureWebJobsStorage__clientId",
      "AzureWebJobsStorage__credential",
      "AzureWebJobsStorage__tableServiceUri",
    ]);
  });

  it("the Node worker runs with Node's defaults, deployed and local (issue 35: Flex bills an instance's size, not its RSS)", () => {
    expect(main()).not.toHaveProperty("languageWorkers__node__arguments");
    expect(NODE_WORKER_ARGUMENTS).toBe("");
  });

  it.each([["AzureWebJobsStorage"], [CONNECTION_SETTINGS.coordination]])(
    "%s: no connection string; credential managedidentity with the app identity's client id",
    (prefix) => {
      const identity = String(readSnapshot(infra(), "main").outputs.appNames).replace(/^func-/, "id-");
      expect(main()).not.toHaveProperty(prefix);
      expect(main()[`${prefix}__credential`]).toBe("managedidentity");
      expect(main()[`${prefix}__clientId`]).toMatch(
        new RegExp(`userAssignedIdentities/${identity}', '[0-9-]+'\\)\\.clientId\\]$`),
      );
    },
  );

  it("host storage is the app's own account (blob and table endpoints); the coordination connection is the shared account's blob and queue endpoints", () => {
    const outputs = readSnapshot(infra(), "main").outputs;
    const endpoint = (account: unknown, service: string) =>
      new RegExp(`storageAccounts/${String(account)}', '[0-9-]+'\\)\\.primaryEndpoints\\.${service}\\]$`);
    const [host] = outputs.hostStorageAccountNames as string[];
    expect(main().AzureWebJobsStorage__blobServiceUri).toMatch(endpoint(host, "blob"));
    expect(main().AzureWebJobsStorage__tableServiceUri).toMatch(endpoint(host, "table"));
    const coordination = outputs.coordinationStorageAccountName;
    expect(main()[`${CONNECTION_SETTINGS.coordination}__blobServiceUri`]).toMatch(endpoint(coordination, "blob"));
    expect(main()[`${CONNECTION_SETTINGS.coordination}__queueServiceUri`]).toMatch(endpoint(coordination, "queue"));
  });

  it("Application Insights ingestion authenticates as the app identity", () => {
    expect(main().APPLICATIONINSIGHTS_AUTHENTICATION_STRING).toMatch(
      /^\[format\('ClientId=\{0\};Authorization=AAD', reference\('[^']*userAssignedIdentities\/id-[^']*'[^)]*\)\.clientId\)\]$/,
    );
  });

  it.each(Object.keys(settingsSchema.shape))("%s deploys with the code's default (infra/main.bicepparam)", (name) => {
    const defaults = settingsSchema.parse({});
    expect(main()[name]).toBe(String(defaults[name as keyof typeof defaults]));
  });

  it("the coordination account gets the containers and queues the defaults name, including the poison queues", () => {
    const defaults = settingsSchema.parse({});
    const main = readSnapshot(infra(), "main");
    expect(created(main, "containers")).toEqual([
      defaults.LEASE_CONTAINER,
      defaults.STATE_CONTAINER,
      defaults.INPUT_CONTAINER,
      defaults.SYSTEM_CONTAINER,
    ]);
    expect(created(main, "queues")).toEqual([
      defaults.WORK_QUEUE,
      `${defaults.WORK_QUEUE}-poison`,
      defaults.RESULTS_QUEUE,
      `${defaults.RESULTS_QUEUE}-poison`,
      defaults.WAKE_QUEUE,
    ]);
  });

  it("WORK_QUEUE and RESULTS_QUEUE are at most as long as the code allows (their -poison queues stay valid names)", () => {
    for (const template of ["infra/main.bicep", "bicep/coordinator.bicep"]) {
      const parameters = readTemplate(infra(), template).parameters as Record<string, { maxLength?: number }>;
      for (const name of ["workQueue", "resultsQueue"])
        expect(parameters[name]?.maxLength, `${template} ${name}`).toBe(MAX_POISONED_QUEUE_NAME_LENGTH);
    }
  });

  it("renaming every container and queue renames both what is created and every app's settings, which pass the code's checks", () => {
    const variant = readSnapshot(infra(), "variant");
    const apps = appSettings(variant);
    expect(apps).toHaveLength(2);
    expect(created(variant, "containers")).toEqual(["l-renamed", "s-renamed", "i-renamed", "y-renamed"]);
    expect(created(variant, "queues")).toEqual([
      "w-renamed",
      "w-renamed-poison",
      "r-renamed",
      "r-renamed-poison",
      "k-renamed",
    ]);
    for (const settings of apps) {
      expect(settings).toMatchObject({
        LEASE_CONTAINER: "l-renamed",
        STATE_CONTAINER: "s-renamed",
        INPUT_CONTAINER: "i-renamed",
        SYSTEM_CONTAINER: "y-renamed",
        WORK_QUEUE: "w-renamed",
        RESULTS_QUEUE: "r-renamed",
        WAKE_QUEUE: "k-renamed",
      });
      expect(() => readSettings(codeSettingsOf(settings))).not.toThrow();
    }
    expect(() => readSettings(codeSettingsOf(main()))).not.toThrow();
    // Each app authenticates as its own identity.
    expect(new Set(apps.map((settings) => settings[`${CONNECTION_SETTINGS.coordination}__clientId`])).size).toBe(2);
  });
});
