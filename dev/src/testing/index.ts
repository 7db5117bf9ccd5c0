/**
 * `azure-leader-coordinator/testing`: run the user's own Function app as a cluster in their tests — Azurite (an
 * optional peer dependency: `npm install --save-dev azurite`), N instances, jobs, events, a killed leader. Importing it
 * starts nothing; {@link startTestCluster} does.
 */
export {
  startTestCluster,
  type ClusterEvent,
  type ClusterWaitOptions,
  type TestCluster,
  type TestClusterOptions,
  type TestInstance,
} from "./cluster.js";
export type { JobStatus } from "../coordination/state/jobStatus.js";
