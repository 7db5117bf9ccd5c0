import { arch, cpus, platform, release, totalmem } from "node:os";
import type { ContainerClient } from "@azure/storage-blob";

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
