/**
 * `azure-leader-coordinator-dev/testing` (the same as the package's main entry): test the user's own Function app —
 * the whole app as a cluster on Azurite ({@link startTestCluster}: N
 * instances, jobs, events, a killed leader). Importing it starts nothing.
 *
 * @packageDocumentation
 */
export {
  startTestCluster,
  type ClusterEvent,
  type ClusterWaitOptions,
  type TestCluster,
  type TestClusterOptions,
  type TestInstance,
} from "./cluster.js";
export type { JobStatus } from "azure-leader-coordinator";
