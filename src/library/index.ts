/** Public API of the leader-election library. */
export * from "./errors";
export type { Logger } from "./util/logger";
export { silentLogger } from "./util/logger";
export type { Clock } from "./util/clock";
export { systemClock } from "./util/clock";
export { delay, type Abortable } from "./util/delay";
export * from "./lease/LeaseStore";
export { BlobLeaseStore, type BlobLeaseStoreOptions } from "../azure/BlobLeaseStore";
export {
  LeaderElector,
  type LeadOptions,
  type LeadResult,
  type LeaderTask,
  type LeaderWatch,
} from "./leadership/LeaderElector";
export type { EpochClaim, LeaderElectorOptions, TakeoverOptions } from "./leadership/options";
export type { LeadershipTerm } from "./leadership/Term";
export type * from "./leadership/events";
export { describeLeader, requestStepDown, type LeaderInfo } from "./leadership/leaderInfo";
export * from "./fencing/StateStore";
export { BlobStateStore } from "../azure/BlobStateStore";
export { FencedStateStore, type Fence, type Versioned, type UpdateOptions } from "./fencing/FencedStateStore";
