import { CountingProxy } from "./countingProxy";
import { isProxyCommand, type ProxyReport } from "./proxyProtocol";

/**
 * Entry of the counting proxy's own process (forked by ./ProxyHandle.ts): a process of its own so that forwarding
 * thousands of requests a second competes with neither the baseline's producer and consumer nor the runner for one
 * event loop. Configuration: PROXY_BLOB_TARGET, PROXY_QUEUE_TARGET (Azurite's ports), PROXY_RUNNER_PID. It exits when
 * told to stop or when its parent goes away (the IPC channel closes).
 */

function send(report: ProxyReport): void {
  process.send?.(report);
}

function portSetting(name: string): number {
  const value = Number(process.env[name]);
  if (!Number.isInteger(value) || value <= 0 || value > 65_535) throw new Error(`${name} must be a TCP port, got "${process.env[name] ?? ""}".`);
  return value;
}

async function main(): Promise<void> {
  const runnerPid = process.env.PROXY_RUNNER_PID === undefined ? undefined : Number(process.env.PROXY_RUNNER_PID);
  const proxy = new CountingProxy({ blobTargetPort: portSetting("PROXY_BLOB_TARGET"), queueTargetPort: portSetting("PROXY_QUEUE_TARGET"), runnerPid });
  const ports = await proxy.start();
  process.on("message", (message: unknown) => {
    if (!isProxyCommand(message)) return;
    if (message.type === "take") {
      void proxy.take().then((counts) => send({ type: "counts", counts }));
    } else {
      void proxy.stop().finally(() => process.exit(0));
    }
  });
  process.once("disconnect", () => process.exit(0));
  send({ type: "ready", ...ports });
}

main().catch((error: unknown) => {
  send({ type: "error", message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
});
