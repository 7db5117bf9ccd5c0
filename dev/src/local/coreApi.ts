import type { InvocationContext } from "@azure/functions";

/**
 * The slice of the contract between the Azure Functions Node worker and `@azure/functions` that the local host uses.
 * The worker answers `require("@azure/functions-core")` with an object of this shape; the library calls
 * `setProgrammingModel` once and `registerFunction` for every `app.*` registration, then the worker runs each
 * invocation through the programming model. The declarations live in the library's repo (`types-core/index.d.ts`),
 * not in the npm package, so the parts used here are restated.
 */

/** The worker's typed value: exactly one member is set. */
export interface RpcTypedData {
  string?: string;
  json?: string;
  bytes?: Uint8Array;
  int?: number;
  double?: number;
  http?: RpcHttpData;
}

/** An HTTP request or response as the worker passes it. */
export interface RpcHttpData {
  method?: string;
  url?: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  params?: Record<string, string>;
  body?: RpcTypedData;
  statusCode?: string;
  cookies?: { name?: string; value?: string }[];
}

/** One binding of a function, as produced by the library's `toCoreFunctionMetadata`. */
export interface RpcBindingInfo {
  type?: string;
  direction?: "in" | "out" | "inout";
  [property: string]: unknown;
}

/** What `registerFunction` receives: the function's name, its bindings by name and retry options. */
export interface FunctionMetadata {
  name: string;
  bindings: Record<string, RpcBindingInfo>;
  retryOptions?: unknown;
}

/** The handler registered with the function. */
export type FunctionCallback = (...args: unknown[]) => unknown;

/** Log levels of the worker protocol. */
export type RpcLogLevel = "trace" | "debug" | "information" | "warning" | "error" | "critical" | "none";

/** Log categories of the worker protocol: the function's own logs are "user". */
export type RpcLogCategory = "user" | "system" | "customMetric";

/** The worker's per-invocation context that the library's invocation model reads. */
export interface CoreInvocationContext {
  invocationId: string;
  request: {
    invocationId: string;
    functionId: string;
    inputData: { name: string; data: RpcTypedData }[];
    triggerMetadata: Record<string, RpcTypedData>;
  };
  metadata: FunctionMetadata;
  /** The library warns about logs after the handler returned unless the state is "postInvocationHooks". */
  state: "preInvocationHooks" | "invocation" | "postInvocationHooks" | undefined;
  log(level: RpcLogLevel, category: RpcLogCategory, message: string): void;
}

/** What `getResponse` returns: the value of the `$return` binding and of every other output binding. */
export interface InvocationResponse {
  returnValue?: RpcTypedData | null;
  outputData?: { name: string; data: RpcTypedData }[];
}

/** The library's per-invocation converter between worker data and handler arguments. */
export interface InvocationModel {
  getArguments(): Promise<{ context: InvocationContext; inputs: unknown[] }>;
  invokeFunction(context: InvocationContext, inputs: unknown[], handler: FunctionCallback): Promise<unknown>;
  getResponse(context: InvocationContext, result: unknown): Promise<InvocationResponse>;
}

/** The library's programming model, handed to the worker through `setProgrammingModel`. */
export interface ProgrammingModel {
  name: string;
  version: string;
  getInvocationModel(coreContext: CoreInvocationContext): InvocationModel;
}

/** A disposable, as the worker returns from registrations. */
export interface Disposable {
  dispose(): void;
}

/** The module the worker provides as `@azure/functions-core`. */
export interface CoreApi {
  version: string;
  hostVersion: string;
  setProgrammingModel(model: ProgrammingModel): void;
  getProgrammingModel(): ProgrammingModel | undefined;
  registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable;
  registerHook(hookName: string, callback: unknown): Disposable;
  log(level: RpcLogLevel, category: RpcLogCategory, message: string): void;
  Disposable: new (callOnDispose: () => void) => Disposable;
}
