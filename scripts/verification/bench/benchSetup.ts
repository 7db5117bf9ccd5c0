import { arch, cpus, platform, release, totalmem } from "node:os";
import type { ContainerClient } from "@azure/storage-blob";
import { UsageError } from "../../../src/cli/flags";

/** What the benchmarks that run jobs share: the input blobs' upload, and the machine they ran on for the report. */

/** Uploads a scenario's input blobs, 64 at a time (setup: never timed or counted). */
export async function uploadInputBlobs(
  container: ContainerClient,
  blobs: readonly { name: string; text: string }[],
): Promise<void> {
  for (let start = 0; start < blobs.length; start += 64) {
    await Promise.all(
      blobs
        .slice(start, start + 64)
        .map((blob) => container.getBlockBlobClient(blob.name).upload(blob.text, Buffer.byteLength(blob.text))),
    );
  }
}

/** The machine, for a report: the load average at the start and the end, the OS, the cores, the memory, Node. */
export function machineInfo(loadAverage1m: { start: number; end: number }): Record<string, unknown> {
  return {
    loadAverage1m,
    platform: platform(),
    release: release(),
    arch: arch(),
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    totalMemoryMiB: Math.round(totalmem() / 1024 / 1024),
    node: process.version,
  };
}

/**
 * A benchmark's command line: its options, or the exit code when there is nothing to run — 0 after `--help` (the usage
 * printed), 2 after a bad flag (its `UsageError` printed with the usage).
 */
export function readBenchArgs<T extends { help: boolean }>(
  name: string,
  parse: (argv: readonly string[]) => T,
  usage: string,
): T | number {
  let args: T;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`${name}: ${error.message}\n\n${usage}`);
    return 2;
  }
  if (!args.help) return args;
  console.log(usage);
  return 0;
}
