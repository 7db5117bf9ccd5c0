import { ConfigurationError } from "../../src/library/errors";
import { assertSupportedNode } from "../../src/library/nodeVersion";
import { runLocal } from "./local/run";
import { parseLocalArgs, USAGE, UsageError } from "./local/options";

/**
 * `npm run local -- [flags]`: the coordinator app on this machine — Azurite, several instance processes, a demo job,
 * a live view and a leadership timeline. The work is in `scripts/tools/local/`; this file only parses the command line,
 * wires Ctrl-C to a graceful stop and turns the result into an exit code.
 */

export { runLocal, type LocalRunResult, type InstanceSummary } from "./local/run";
export { parseLocalArgs, UsageError, type LocalOptions, type RunLocalOptions } from "./local/options";

/** Runs the CLI and returns its exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let options;
  try {
    assertSupportedNode();
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  try {
    options = parseLocalArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const controller = new AbortController();
  const interrupt = (): void => {
    if (controller.signal.aborted) {
      process.stderr.write("\nStopping is in progress (waiting for instances to finish their invocations).\n");
      return;
    }
    process.stderr.write("\nStopping gracefully…\n");
    controller.abort();
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  try {
    const result = await runLocal({ ...options, abortSignal: controller.signal });
    return result.exitCode;
  } finally {
    process.off("SIGINT", interrupt);
    process.off("SIGTERM", interrupt);
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
