/**
 * `azure-leader-coordinator-dev/testing` (the same as the package's main entry): test the user's own Function app —
 * a task kind alone, in milliseconds ({@link runKind}), or the whole app as a cluster on Azurite ({@link
 * startTestCluster}: N instances, jobs, events, a killed leader). Importing it starts nothing.
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
export {
  runKind,
  type ItemOutcome,
  type KindInput,
  type KindLogLine,
  type KindRun,
  type PartialOf,
  type RunKindOptions,
} from "./runKind.js";
export type { AggregateOf, JobStatus } from "azure-leader-coordinator";
