import type { AppEventType } from "../../src/app/events";

/** Every event type the app emits, kept complete by the compiler: a new type must be added here. */
export const EVERY_EVENT_TYPE: Readonly<Record<AppEventType, true>> = {
  "lease-acquired": true,
  "lease-renewed": true,
  "lease-lost": true,
  "lease-released": true,
  "leader-observed": true,
  "lease-broken": true,
  "step-started": true,
  "step-completed": true,
  "step-aborted": true,
  "step-skipped": true,
  "job-registered": true,
  "job-completed": true,
  "job-failed": true,
  "job-cancelled": true,
  "job-expired": true,
  "job-pass-failed": true,
  "job-removed": true,
  "job-removal-failed": true,
  "message-rejected": true,
};
