/**
 * The implementations a round runs: the app, and the raw-SDK loops (./baseline.ts) — per item and batched; and the
 * app and the batched loop once more, each idle first (`idleProject`, `idleBatched`: their queue polling backed off to
 * its longest wait, 2 s, when the job comes, as a deployed app's idle instances').
 */
export type Implementation = "project" | "perItem" | "batched" | "idleProject" | "idleBatched";
export const IMPLEMENTATIONS: readonly Implementation[] = [
  "project",
  "perItem",
  "batched",
  "idleProject",
  "idleBatched",
];
