import { spawnSync } from "node:child_process";

/** How a child process run by {@link runOnHeap} ended, and whether it ran out of memory. */
export interface HeapChildResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  /** Its standard output, trimmed. */
  stdout: string;
  /** Its standard error says the V8 heap (or an array or string) could not grow. */
  oom: boolean;
}

/**
 * Runs a TypeScript file (through tsx) in a child Node process whose old-space heap is `heapMb`, for tests that show a
 * path stays within a memory bound: a process that runs out of memory dies, which no in-process test can observe.
 */
export function runOnHeap(
  file: string,
  heapMb: number,
  args: readonly (string | number)[],
  options: { nodeFlags?: readonly string[]; timeoutMs?: number } = {},
): HeapChildResult {
  const child = spawnSync(
    process.execPath,
    [`--max-old-space-size=${heapMb}`, ...(options.nodeFlags ?? []), "--import", "tsx", file, ...args.map(String)],
    { encoding: "utf8", timeout: options.timeoutMs ?? 300_000 },
  );
  return {
    status: child.status,
    signal: child.signal,
    stdout: child.stdout.trim(),
    oom: /heap out of memory|Invalid array length|Invalid string length/.test(child.stderr),
  };
}
