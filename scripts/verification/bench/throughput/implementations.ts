/**
 * The implementations a round runs: the app, and the raw-SDK loops (./baseline.ts) — per item, batched, and batched
 * with workers that idled first (`idleBatched`: their poll back-off at its longest when the producer sends, as the
 * app's instances' is when its leader dispatches).
 */
export type Implementation = "project" | "perItem" | "batched" | "idleBatched";
export const IMPLEMENTATIONS: readonly Implementation[] = ["project", "perItem", "batched", "idleBatched"];
