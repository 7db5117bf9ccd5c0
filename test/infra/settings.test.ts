import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  APP_SETTING_NAMES,
  CONNECTION_SETTINGS,
  MAX_POISONED_QUEUE_NAME_LENGTH,
  readSettings,
  settingsSchema,
} from "../../src/app/settings";
import {
  type BicepFile,
  INFRA_DIR,
  callArguments,
  calledFunctionName,
  listFiles,
  moduleDeclarations,
  parameterDeclarations,
  parseBicepFile,
  parseBicepParamFile,
  valueAt,
  variableDeclarations,
} from "./bicep";
import { type BicepValue, evaluate } from "./evaluate";
import { type AppSettingEntry, appSettingsObjects } from "./checks";
import { NODE_WORKER_ARGUMENTS } from "../../src/local/instances";

/**
 * One source of truth for app settings: src/app/settings.ts. These tests prove that the Bicep templates set exactly
 * the names the code reads, with the code's defaults, and create the containers and queues those settings name.
 *
 * The rule that tells host settings from app settings: a name is the Functions host's (or the platform's) when it
 * starts with one of HOST_SETTING_PREFIXES. Every other name in the templates must be one the code reads, and every
 * name the code reads must be in the templates.
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

let templates: BicepFile[] = [];
let main: BicepFile;
let settings: AppSettingEntry[] = [];

beforeAll(async () => {
  templates = await Promise.all(listFiles(INFRA_DIR, ".bicep").map((file) => parseBicepFile(file)));
  main = await parseBicepFile(path.join(INFRA_DIR, "main.bicep"));
  const objects = appSettingsObjects(templates);
  expect(objects, "exactly one 'appsettings' config resource").toHaveLength(1);
  settings = objects[0]?.entries ?? [];
});

const setting = (name: string): AppSettingEntry | undefined => settings.find((entry) => entry.key === name);

/** main.bicep's parameters bound to their defaults (those that are constants), optionally overridden. */
function mainScope(overrides: Record<string, BicepValue> = {}): Map<string, BicepValue> {
  const scope = new Map<string, BicepValue>();
  for (const [name, declaration] of parameterDeclarations(main)) {
    if (declaration.defaultValue === undefined) continue;
    try {
      scope.set(name, evaluate(declaration.defaultValue, scope));
    } catch {
      // e.g. resourceGroup().location: not a constant, and not an app setting.
    }
  }
  for (const [name, value] of Object.entries(overrides)) scope.set(name, value);
  for (const [name, value] of variableDeclarations(main)) {
    try {
      scope.set(name, evaluate(value, scope));
    } catch {
      // Not a constant.
    }
  }
  return scope;
}

/** A string value, or a test failure saying what it was instead. */
function asString(value: BicepValue): string {
  if (typeof value !== "string") throw new Error(`expected a string, got ${JSON.stringify(value)}`);
  return value;
}

/** The value of `key` in the params object that main.bicep passes to the module at `modulePath`. */
function moduleParam(modulePath: string, key: string) {
  const value = valueAt(moduleParams(modulePath), key);
  if (value === undefined) throw new Error(`main.bicep does not pass '${key}' to ${modulePath}`);
  return value;
}

/** The `params` object that main.bicep passes to the module at `modulePath`. */
function moduleParams(modulePath: string) {
  const declaration = moduleDeclarations(main).find((module) => module.path === modulePath);
  const params = valueAt(declaration?.body, "params");
  if (params === undefined) throw new Error(`main.bicep has no module '${modulePath}' with params`);
  return params;
}

/**
 * The value an app setting gets when main.bicep is deployed with `scope` as its parameters: the setting's expression
 * in the app module, with the module's parameters bound to what main.bicep passes it.
 */
function deployedValue(name: string, scope: ReadonlyMap<string, BicepValue>): BicepValue {
  const entry = setting(name);
  if (entry === undefined) throw new Error(`no app setting ${name}`);
  const passed = moduleParams("modules/functionApp.bicep");
  // The setting's value is a module parameter, possibly wrapped in string(…).
  const inner =
    entry.value.type === "call_expression" && calledFunctionName(entry.value) === "string"
      ? callArguments(entry.value)[0]
      : entry.value;
  if (inner?.type !== "identifier") throw new Error(`${name} is not set from a module parameter: ${entry.value.text}`);
  const argument = valueAt(passed, inner.text);
  if (argument === undefined) throw new Error(`main.bicep does not pass '${inner.text}' to the app module`);
  return evaluate(entry.value, new Map([[inner.text, evaluate(argument, scope)]]));
}

describe("app settings: Bicep and src/app/settings.ts are the same set", () => {
  it("the code's names are unique and none looks like a host setting (the prefix rule cannot hide one)", () => {
    expect(new Set(APP_SETTING_NAMES).size).toBe(APP_SETTING_NAMES.length);
    expect(APP_SETTING_NAMES.filter(isHostSetting)).toEqual([]);
  });

  it("the templates set each name once", () => {
    const names = settings.map((entry) => entry.key);
    expect(names.length).toBeGreaterThan(0);
    expect(new Set(names).size).toBe(names.length);
  });

  it("the app's own names in Bicep equal APP_SETTING_NAMES exactly", () => {
    const inBicep = settings.map((entry) => entry.key).filter((name) => !isHostSetting(name));
    expect([...inBicep].sort()).toEqual([...APP_SETTING_NAMES].sort());
  });

  it("the host settings are only identity-based storage, Entra-authenticated Application Insights and the Node flags", () => {
    const hostNames = settings
      .map((entry) => entry.key)
      .filter(isHostSetting)
      .sort();
    expect(hostNames).toEqual([
      "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
      "APPLICATIONINSIGHTS_CONNECTION_STRING",
      "AzureWebJobsStorage__blobServiceUri",
      "AzureWebJobsStorage__clientId",
      "AzureWebJobsStorage__credential",
      "AzureWebJobsStorage__tableServiceUri",
      "languageWorkers__node__arguments",
    ]);
  });

  it("the Node flags are the local host's (NODE_WORKER_ARGUMENTS), so local runs and benchmarks measure what is deployed", () => {
    expect(setting("languageWorkers__node__arguments")?.value.text).toBe(`'${NODE_WORKER_ARGUMENTS}'`);
  });
});

describe("connections are identity-based", () => {
  it.each([["AzureWebJobsStorage"], [CONNECTION_SETTINGS.coordination]])(
    "%s: no connection string, credential = managedidentity with the app identity's client id",
    (prefix) => {
      expect(setting(prefix), `bare ${prefix} would be a connection string`).toBeUndefined();
      expect(setting(`${prefix}__credential`)?.value.text).toBe("'managedidentity'");
      expect(setting(`${prefix}__clientId`)?.value.text).toBe("identity.properties.clientId");
      expect(setting(`${prefix}__blobServiceUri`)).toBeDefined();
    },
  );

  it("host storage is reached by blob and table endpoint of the app's own host storage account (diagnostic events go to tables)", () => {
    expect(setting("AzureWebJobsStorage__blobServiceUri")?.value.text).toBe("hostStorage.outputs.blobEndpoint");
    expect(setting("AzureWebJobsStorage__tableServiceUri")?.value.text).toBe("hostStorage.outputs.tableEndpoint");
  });

  it("the coordination connection points at the shared coordination account's endpoints", () => {
    const prefix = CONNECTION_SETTINGS.coordination;
    const passed = moduleParams("modules/functionApp.bicep");
    const blob = setting(`${prefix}__blobServiceUri`)?.value.text ?? "";
    const queue = setting(`${prefix}__queueServiceUri`)?.value.text ?? "";
    expect(valueAt(passed, blob)?.text).toBe("coordinationStorage.outputs.blobEndpoint");
    expect(valueAt(passed, queue)?.text).toBe("coordinationStorage.outputs.queueEndpoint");
  });

  it("Application Insights ingestion authenticates as the app identity", () => {
    expect(setting("APPLICATIONINSIGHTS_AUTHENTICATION_STRING")?.value.text).toBe(
      "'ClientId=${identity.properties.clientId};Authorization=AAD'",
    );
  });
});

describe("defaults and storage layout follow the code", () => {
  const codeDefaults = settingsSchema.parse({});

  it.each(Object.keys(settingsSchema.shape))("%s deploys with the code's default", (name) => {
    expect(deployedValue(name, mainScope())).toBe(String(codeDefaults[name as keyof typeof codeDefaults]));
  });

  it("main.bicepparam keeps the code's defaults for the app settings it sets", async () => {
    const values = variableDeclarations(await parseBicepParamFile(path.join(INFRA_DIR, "main.bicepparam")));
    const overrides = Object.fromEntries([...values].map(([name, node]) => [name, evaluate(node, new Map())]));
    for (const name of Object.keys(settingsSchema.shape)) {
      expect(deployedValue(name, mainScope(overrides)), name).toBe(
        String(codeDefaults[name as keyof typeof codeDefaults]),
      );
    }
  });

  it("the coordination account gets the containers and queues the defaults name, including the poison queues", () => {
    const scope = mainScope();
    expect(evaluate(moduleParam("modules/storageAccount.bicep", "containerNames"), scope)).toEqual([
      codeDefaults.LEASE_CONTAINER,
      codeDefaults.STATE_CONTAINER,
      codeDefaults.INPUT_CONTAINER,
      codeDefaults.SYSTEM_CONTAINER,
    ]);
    expect(evaluate(moduleParam("modules/storageAccount.bicep", "queueNames"), scope)).toEqual([
      codeDefaults.WORK_QUEUE,
      `${codeDefaults.WORK_QUEUE}-poison`,
      codeDefaults.RESULTS_QUEUE,
      `${codeDefaults.RESULTS_QUEUE}-poison`,
      codeDefaults.WAKE_QUEUE,
    ]);
  });

  it("a deployment's WORK_QUEUE and RESULTS_QUEUE are at most as long as the code allows (their -poison queues stay valid names)", () => {
    const parameters = parameterDeclarations(main);
    for (const name of ["workQueue", "resultsQueue"])
      expect(parameters.get(name)?.decorators.get("maxLength")?.[0]?.text, name).toBe(
        String(MAX_POISONED_QUEUE_NAME_LENGTH),
      );
  });

  it("the settings deployed with the defaults, or with every container and queue renamed, pass the code's checks across settings", () => {
    const renamed = { inputContainer: "i-renamed", systemContainer: "y-renamed", resultsQueue: "r-renamed" };
    for (const scope of [mainScope(), mainScope(renamed)]) {
      const env = Object.fromEntries(
        Object.keys(settingsSchema.shape).map((name) => {
          const value = deployedValue(name, scope);
          if (typeof value === "object") throw new Error(`${name} deploys as ${JSON.stringify(value)}`);
          return [name, String(value)];
        }),
      );
      expect(() => readSettings(env)).not.toThrow();
    }
  });

  it("renaming a container or queue parameter renames both the created resource and the app setting", () => {
    const renamed = {
      leaseContainer: "l-renamed",
      stateContainer: "s-renamed",
      inputContainer: "i-renamed",
      systemContainer: "y-renamed",
      workQueue: "w-renamed",
      resultsQueue: "r-renamed",
      wakeQueue: "k-renamed",
    };
    const scope = mainScope(renamed);
    const containers = evaluate(moduleParam("modules/storageAccount.bicep", "containerNames"), scope);
    const queues = evaluate(moduleParam("modules/storageAccount.bicep", "queueNames"), scope);
    expect(containers).toEqual([
      deployedValue("LEASE_CONTAINER", scope),
      deployedValue("STATE_CONTAINER", scope),
      deployedValue("INPUT_CONTAINER", scope),
      deployedValue("SYSTEM_CONTAINER", scope),
    ]);
    expect(containers).toEqual(["l-renamed", "s-renamed", "i-renamed", "y-renamed"]);
    const work = asString(deployedValue("WORK_QUEUE", scope));
    const results = asString(deployedValue("RESULTS_QUEUE", scope));
    const wake = asString(deployedValue("WAKE_QUEUE", scope));
    expect(queues).toEqual([work, `${work}-poison`, results, `${results}-poison`, wake]);
    expect(work).toBe("w-renamed");
    expect(wake).toBe("k-renamed");
  });
});
