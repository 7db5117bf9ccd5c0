import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseEnqueueArgs } from "../../src/cli/enqueueCommand";
import { UsageError } from "../../src/cli/flags";
import { JobsHttpApi } from "../../src/cli/jobsHttpApi";

/** `enqueue --idempotency-key`: parsed, checked, and sent as the `Idempotency-Key` header; a replay is told apart. */
describe("azure-leader-coordinator enqueue --idempotency-key", () => {
  const dir = mkdtempSync(join(tmpdir(), "enqueue-key-"));
  const job = join(dir, "job.json");
  writeFileSync(job, JSON.stringify({ kind: "k", items: [{ inline: "x" }] }));

  it("goes with --file, as 1 to 200 printable ASCII characters", () => {
    expect(parseEnqueueArgs(["--file", job, "--url", "https://a/api", "--idempotency-key", "order-17"])).toMatchObject({
      action: { kind: "submit", idempotencyKey: "order-17" },
    });
    expect(() => parseEnqueueArgs(["--status", "id", "--url", "https://a/api", "--idempotency-key", "k"])).toThrow(
      new UsageError("--idempotency-key goes with --file."),
    );
    for (const bad of ["", "k".repeat(201), "clé"])
      expect(() => parseEnqueueArgs(["--file", job, "--url", "https://a/api", "--idempotency-key", bad])).toThrow(
        /--idempotency-key must be 1 to 200 printable ASCII characters/,
      );
  });

  it("sends the key as the Idempotency-Key header, and reads a 200 as the first job's id (a replay)", async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((request, response) => {
      seen.push(request.headers);
      request.resume();
      const replay = seen.length > 1;
      response.writeHead(replay ? 200 : 202, { "content-type": "application/json" });
      response.end(JSON.stringify({ id: "job-1", itemCount: 1, ...(replay ? { replayed: true } : {}) }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const api = new JobsHttpApi(() => `http://127.0.0.1:${port}/api`);
      expect(await api.submit({}, { idempotencyKey: "order-17" })).toEqual({ ok: true, id: "job-1", itemCount: 1 });
      expect(await api.submit({}, { idempotencyKey: "order-17" })).toEqual({
        ok: true,
        id: "job-1",
        itemCount: 1,
        replayed: true,
      });
      expect(seen.map((headers) => headers["idempotency-key"])).toEqual(["order-17", "order-17"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
