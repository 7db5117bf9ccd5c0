import { assertSupportedNode } from "../../src/library/nodeVersion";

/**
 * Vitest's global setup: on a Node.js older than package.json's engines (22.12) the run stops at once with the reason,
 * instead of failing hundreds of tests with "Promise.withResolvers is not a function".
 */
export function setup(): void {
  assertSupportedNode();
}
