import type { FunctionMetadata, RpcBindingInfo } from "./coreApi.js";

/** Reading binding metadata as the host does: find the trigger, resolve `%AppSetting%` references, parse TimeSpans. */

/** The trigger binding of a function. */
export interface TriggerBinding {
  /** The binding's name (the key in `metadata.bindings`). */
  readonly name: string;
  /** E.g. "timerTrigger", "queueTrigger", "httpTrigger". */
  readonly type: string;
  readonly binding: RpcBindingInfo;
}

/** Returns the function's trigger binding (the one whose type ends in "Trigger", as the library decides). */
export function findTrigger(metadata: FunctionMetadata): TriggerBinding {
  for (const [name, binding] of Object.entries(metadata.bindings)) {
    if (binding.type !== undefined && /trigger$/i.test(binding.type)) return { name, type: binding.type, binding };
  }
  throw new Error(`Function "${metadata.name}" has no trigger binding.`);
}

/**
 * Replaces every `%NAME%` in `value` with the app setting NAME, as the host does for binding properties.
 *
 * @throws Error naming the function, the property and the missing setting.
 */
export function resolveAppSettings(value: string, env: Record<string, string | undefined>, where: string): string {
  return value.replace(/%([^%]+)%/g, (_match, name: string) => {
    const setting = env[name];
    if (setting === undefined) throw new Error(`${where} refers to app setting %${name}%, which is not set.`);
    return setting;
  });
}

/** A string property of a binding, with `%AppSetting%` references resolved; undefined when absent. */
export function stringProperty(
  binding: RpcBindingInfo,
  property: string,
  env: Record<string, string | undefined>,
  functionName: string,
): string | undefined {
  const value = binding[property];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string")
    throw new Error(`Function "${functionName}": binding property "${property}" must be a string.`);
  return resolveAppSettings(value, env, `Function "${functionName}" property "${property}"`);
}
