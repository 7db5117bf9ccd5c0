import { UsageError } from "azure-leader-coordinator/internal";
import { parseSchedule } from "../local/timerTrigger.js";

/**
 * A COORDINATOR_SCHEDULE flag: an NCRONTAB expression with six fields, seconds first, checked by the local host's
 * own parser; `fallback` when not given.
 *
 * @throws UsageError naming the expression and what is wrong with it.
 */
export function scheduleFlag(raw: string | undefined, flag: string, fallback: string): string {
  const value = (raw ?? fallback).trim();
  const problem = `${flag} must be an NCRONTAB expression with six fields, seconds first (e.g. "${fallback}"), got "${value}"`;
  if (value.split(/\s+/).length !== 6) throw new UsageError(`${problem}.`);
  try {
    parseSchedule(value, "coordinator");
  } catch (error) {
    throw new UsageError(`${problem}: ${(error as Error).message}`);
  }
  return value;
}
