/**
 * Child-process entry: `node --import tsx test/support/captureRegistrations.ts <entry>` loads an app entry (a
 * package's `main`, or `functions/index.ts`) with the Functions worker's core API stood in, exactly as the local host
 * does (dev/src/local/registrations.ts), and prints what it registered as one JSON line on stdout:
 * `{ functions: [{ name, bindings }], hooks: [name] }`. A load failure exits 1 with the error on stderr.
 */
import { loadFunctionApp } from "../../dev/src/local/registrations";
import type { RpcBindingInfo } from "../../dev/src/local/coreApi";

/** What the child prints. */
export interface CapturedRegistrations {
  functions: { name: string; bindings: Record<string, RpcBindingInfo> }[];
  hooks: string[];
}

async function main(entry: string | undefined): Promise<void> {
  if (entry === undefined) throw new Error("Usage: captureRegistrations.ts <entry file>");
  const app = await loadFunctionApp(entry);
  const captured: CapturedRegistrations = {
    functions: app.functions.map((fn) => ({ name: fn.metadata.name, bindings: fn.metadata.bindings })),
    hooks: app.hooks.map((hook) => hook.name),
  };
  process.stdout.write(`${JSON.stringify(captured)}\n`);
}

if (process.argv[1] !== undefined && /captureRegistrations\.ts$/.test(process.argv[1])) {
  main(process.argv[2]).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  });
}
