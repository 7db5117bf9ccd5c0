/** Public API of the leader-election library. */
export * from "./errors.js";
export type { Logger } from "./util/logger.js";
export { silentLogger } from "./util/logger.js";
export { azureSdkLogger } from "./util/azureLogger.js";
export type { Clock } from "./util/clock.js";
export { systemClock } from "./util/clock.js";
export { delay, type Abortable } from "./util/delay.js";
export * from "./lease/LeaseStore.js";
export { BlobLeaseStore, type BlobLeaseStoreOptions } from "../azure/BlobLeaseStore.js";
export {
  LeaderElector,
  type LeadOptions,
  type LeadResult,
  type LeaderTask,
  type LeaderWatch,
} from "./leadership/LeaderElector.js";
export type { EpochClaim, LeaderElectorOptions, TakeoverOptions } from "./leadership/options.js";
export type { LeadershipTerm } from "./leadership/Term.js";
export type * from "./leadership/events.js";
export { describeLeader, requestStepDown, type LeaderInfo } from "./leadership/leaderInfo.js";
export * from "./fencing/StateStore.js";
export { BlobStateStore } from "../azure/BlobStateStore.js";
export { FencedStateStore, type Fence, type Versioned, type UpdateOptions } from "./fencing/FencedStateStore.js";
