/** The implementations a round runs: the app, and the two raw-SDK loops (./baseline.ts). */
export type Implementation = "project" | "perItem" | "batched";
export const IMPLEMENTATIONS: readonly Implementation[] = ["project", "perItem", "batched"];
