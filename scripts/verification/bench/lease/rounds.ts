import { delay } from "../../../../src/library/index";
import type { ContenderGroup } from "./ContenderGroup";
import type { ContenderProcess } from "./ContenderProcess";

/** The two measured scenarios. */
export const SCENARIOS = ["graceful", "crash"] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** How long to wait for one step of a round (spawn, release, next leader) before giving up. */
export const STEP_TIMEOUT_MS = 120_000;

/** One measured leadership change. */
export interface RoundSample {
  round: number;
  /** The figure: next leader's term start − release completed (graceful) or − SIGKILL sent (crash), in s. */
  takeoverS: number;
  /** Graceful only: next leader's term start − release command sent, in s. */
  fromCommandS?: number;
  /** How long the leader had been left alone with the fresh contender before the release or the kill, in s. */
  holdS: number;
  oldLeader: string;
  newLeader: string;
}

/**
 * One round: a fresh contender joins (so that exactly three race for the lease once the leader is gone), the leader
 * is left alone for `holdMs` (random, so the moment the leader goes falls anywhere in the renew and retry cycles), then
 * it goes — gracefully or by SIGKILL — and the round waits for another contender to begin a term.
 */
export async function runRound(
  group: ContenderGroup,
  scenario: Scenario,
  round: number,
  holdMs: number,
): Promise<RoundSample> {
  const leader = await group.currentLeader(STEP_TIMEOUT_MS);
  await group.spawn(STEP_TIMEOUT_MS);
  await delay(holdMs);
  if (!leader.isRunning) throw new Error(`The ${group.impl} leader ${leader.id} exited before the round began.`);
  const sample = scenario === "graceful" ? await handOver(group, leader) : await crash(group, leader);
  return { round, holdS: Math.round(holdMs) / 1000, ...sample };
}

type Measured = Omit<RoundSample, "round" | "holdS">;

async function handOver(group: ContenderGroup, leader: ContenderProcess): Promise<Measured> {
  const after = group.mark;
  group.expectExit(leader);
  const commandSentMs = Date.now();
  leader.sendRelease();
  const released = group.waitFor(
    (message) => message.id === leader.id && (message.type === "released" || message.type === "stopped"),
    {
      after,
      timeoutMs: STEP_TIMEOUT_MS,
      what: `${leader.id} to release`,
    },
  );
  const next = group.waitFor((message) => message.type === "acquired" && message.id !== leader.id, {
    after,
    timeoutMs: STEP_TIMEOUT_MS,
    what: `the next ${group.impl} leader`,
  });
  const [releasedMessage, nextMessage] = await Promise.all([released, next]);
  if (releasedMessage.type !== "released")
    throw new Error(`${leader.id} was asked to release but reported that it was not leading.`);
  await leader.closed;
  return {
    takeoverS: (nextMessage.t - releasedMessage.t) / 1000,
    fromCommandS: (nextMessage.t - commandSentMs) / 1000,
    oldLeader: leader.id,
    newLeader: nextMessage.id,
  };
}

async function crash(group: ContenderGroup, leader: ContenderProcess): Promise<Measured> {
  const after = group.mark;
  group.expectExit(leader);
  const killedMs = Date.now();
  leader.kill();
  const next = await group.waitFor((message) => message.type === "acquired" && message.id !== leader.id, {
    after,
    timeoutMs: STEP_TIMEOUT_MS,
    what: `the next ${group.impl} leader`,
  });
  await leader.closed;
  return { takeoverS: (next.t - killedMs) / 1000, oldLeader: leader.id, newLeader: next.id };
}
