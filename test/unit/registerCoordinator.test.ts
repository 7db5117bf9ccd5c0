import { describe, expect, it } from "vitest";
import { z } from "zod";
import { groupByKind } from "../../src/groupBy/groupBy";
import { defineTaskKind } from "../../src/coordination/kinds/taskKinds";
import { registerCoordinator, type CoordinatorOptions, type FunctionsApp } from "../../src/host/registerCoordinator";
import { ConfigurationError } from "../../src/library/errors";

/** What a registration put into a recording `app`: each function's name and options, and the hooks. */
interface Recorded {
  functions: { kind: string; name: string; options: Record<string, unknown> }[];
  hooks: string[];
}

/** Registers into a recording `app` (no Functions host, no storage: registering connects to nothing). */
function register(
  options: Partial<CoordinatorOptions> = {},
): Recorded & { result: ReturnType<typeof registerCoordinator> } {
  const recorded: Recorded = { functions: [], hooks: [] };
  const record =
    (kind: string) =>
    (name: string, functionOptions: object): void => {
      recorded.functions.push({ kind, name, options: functionOptions as Record<string, unknown> });
    };
  const app: FunctionsApp = {
    timer: record("timer"),
    storageQueue: record("storageQueue"),
    http: record("http"),
    hook: {
      appTerminate: () => {
        recorded.hooks.push("appTerminate");
      },
    },
  };
  const result = registerCoordinator(app, { taskKinds: [groupByKind], env: {}, ...options });
  return { ...recorded, result };
}

/** The recorded functions without their handlers. */
const shapes = (recorded: Recorded) =>
  recorded.functions.map(({ kind, name, options }) => {
    const { handler, ...rest } = options;
    expect(typeof handler).toBe("function");
    return { kind, name, ...rest };
  });

describe("registerCoordinator: one call registers the coordinator in a user's app (issue 20)", () => {
  it("with no options but the kinds: today's names, queues, routes and schedule, the admin key for cancelling and stepping down, and the terminate hook", () => {
    const recorded = register();
    expect(shapes(recorded)).toEqual([
      { kind: "timer", name: "coordinator", schedule: "0 * * * * *" },
      { kind: "storageQueue", name: "worker", queueName: "work-items", connection: "COORDINATION_STORAGE" },
      { kind: "storageQueue", name: "wake", queueName: "coordinator-wake", connection: "COORDINATION_STORAGE" },
      { kind: "http", name: "submitJob", methods: ["POST"], authLevel: "function", route: "jobs" },
      { kind: "http", name: "getJob", methods: ["GET"], authLevel: "function", route: "jobs/{id}" },
      { kind: "http", name: "cancelJob", methods: ["DELETE"], authLevel: "admin", route: "jobs/{id}" },
      { kind: "http", name: "getLeader", methods: ["GET"], authLevel: "function", route: "leader" },
      { kind: "http", name: "stepDown", methods: ["POST"], authLevel: "admin", route: "leader/step-down" },
      { kind: "http", name: "getStatus", methods: ["GET"], authLevel: "function", route: "status" },
    ]);
    expect(recorded.hooks).toEqual(["appTerminate"]);
    expect(recorded.result.functionNames).toMatchObject({ coordinator: "coordinator", worker: "worker" });
  });

  it("names, queues, schedule, connection, routes and auth levels come from the options; settings in code win over the environment", () => {
    const recorded = register({
      functionNames: { coordinator: "thumbsLeader", worker: "thumbsWorker", getStatus: "thumbsStatus" },
      connection: "THUMBS_STORAGE",
      settings: { WORK_QUEUE: "thumbs-work", COORDINATOR_SCHEDULE: "*/30 * * * * *" },
      env: { WORK_QUEUE: "from-env", WAKE_QUEUE: "thumbs-wake" },
      http: { routePrefix: "thumbs", authLevel: "anonymous", operatorAuthLevel: "admin" },
    });
    const byName = new Map(shapes(recorded).map((fn) => [fn.name, fn]));
    expect(byName.get("thumbsLeader")).toMatchObject({ schedule: "*/30 * * * * *" });
    expect(byName.get("thumbsWorker")).toMatchObject({ queueName: "thumbs-work", connection: "THUMBS_STORAGE" });
    expect(byName.get("wake")).toMatchObject({ queueName: "thumbs-wake", connection: "THUMBS_STORAGE" });
    expect(byName.get("thumbsStatus")).toMatchObject({ route: "thumbs/status", authLevel: "anonymous" });
    expect(byName.get("cancelJob")).toMatchObject({ route: "thumbs/jobs/{id}", authLevel: "admin" });
    expect(byName.get("stepDown")).toMatchObject({ route: "thumbs/leader/step-down", authLevel: "admin" });
  });

  it("http: false registers the timer, the queues and the hook only", () => {
    const recorded = register({ http: false });
    expect(recorded.functions.map((fn) => fn.name)).toEqual(["coordinator", "worker", "wake"]);
    expect(recorded.hooks).toEqual(["appTerminate"]);
  });

  it("refuses bad options at start, naming each problem and what is allowed, and registers nothing", () => {
    const attempt = (options: Partial<CoordinatorOptions>): { error: unknown; registered: number } => {
      const recorded: Recorded = { functions: [], hooks: [] };
      const record = (name: string): void => {
        recorded.functions.push({ kind: "", name, options: {} });
      };
      const app: FunctionsApp = {
        timer: record,
        storageQueue: record,
        http: record,
        hook: { appTerminate: () => record("hook") },
      };
      try {
        registerCoordinator(app, { taskKinds: [groupByKind], env: {}, ...options });
        return { error: undefined, registered: recorded.functions.length };
      } catch (error) {
        return { error, registered: recorded.functions.length };
      }
    };
    const cases: [Partial<CoordinatorOptions>, RegExp][] = [
      [{ taskKinds: [] }, /taskKinds must name at least one task kind/],
      [{ functionNames: { worker: "9lives" } }, /functionNames\.worker "9lives" must be a letter/],
      [{ functionNames: { worker: "coordinator" } }, /functionNames\.worker and functionNames\.coordinator are both/],
      [{ http: { routePrefix: "/api/x/" } }, /http\.routePrefix "\/api\/x\/" must be path segments/],
      [
        { settings: { WORK_QUEUES: "x" } as never },
        /settings has "WORK_QUEUES", which is not a setting; known settings: /,
      ],
      [{ settings: { LEASE_DURATION_SECONDS: 10 } }, /LEASE_DURATION_SECONDS="10" must be from 15 to 60/],
      [{ env: { DISPATCH_BATCH_SIZE: "lots" } }, /DISPATCH_BATCH_SIZE="lots"/],
      [{ connection: "not a setting!" }, /connection "not a setting!" must be the name of an app setting/],
      [
        { taskKinds: [groupByKind, defineTaskKind({ name: "group-by", process: () => 1 })] },
        /Task kind "group-by" is registered twice/,
      ],
      [
        { taskKinds: [defineTaskKind({ name: "x", params: z.string(), process: () => 1, concurrency: 100 })] },
        /concurrency is 100; it must be a whole number from 1 to 64/,
      ],
    ];
    for (const [options, message] of cases) {
      const { error, registered } = attempt(options);
      expect(error, JSON.stringify(options)).toBeInstanceOf(ConfigurationError);
      expect((error as Error).message).toMatch(message);
      expect(registered).toBe(0);
    }
  });
});
