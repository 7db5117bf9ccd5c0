// Runs Azurite as a grandchild and kills it when the parent goes away (its stdin closes), so a test run or a
// benchmark that is SIGKILLed never leaves an Azurite behind. Plain JS: it must start without a TypeScript loader.
"use strict";
const { spawn } = require("node:child_process");

const [azuriteMain, ...args] = process.argv.slice(2);
const azurite = spawn(process.execPath, [azuriteMain, ...args], { stdio: ["ignore", "inherit", "inherit"] });
const stop = (signal) => {
  if (azurite.exitCode === null && azurite.signalCode === null) azurite.kill(signal);
};
process.stdin.on("end", () => stop("SIGKILL"));
process.stdin.on("close", () => stop("SIGKILL"));
process.stdin.resume();
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGTERM"));
azurite.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
