import { CronExpressionParser } from "cron-parser";
import { delay, parseTimeSpanMs } from "azure-leader-coordinator/internal";
import { stringProperty, type TriggerBinding } from "./bindings.js";
import type { Invoker } from "./invoke.js";
import type { ListenerLock } from "./listenerLock.js";
import type { RegisteredFunction } from "./registrations.js";

/**
 * Timer triggers as the host runs them: NCRONTAB with seconds (`*\/5 * * * * *`; five fields also parse, seconds 0)
 * or a TimeSpan (`"00:00:30"`), `%AppSetting%` allowed, times in UTC unless WEBSITE_TIME_ZONE says otherwise. The
 * next occurrence is computed after each invocation ends, so invocations of one function never overlap and missed
 * occurrences are skipped, not queued. `runOnStartup` fires once each time the listener starts.
 *
 * With a {@link ListenerLock} (the host passes one when host storage, AzureWebJobsStorage, is set) the listener runs
 * only while this instance holds the app's lock, as in Azure: one instance per app fires the timer. Without one,
 * every instance fires it, like separate function apps.
 *
 * Not emulated: the schedule monitor (`isPastDue` is always false); see docs/LOCAL-HOST.md, "Known gaps".
 */

/** Occurrences of a schedule. */
export interface Schedule {
  /** The first occurrence strictly after `after`. */
  next(after: Date): Date;
}

/** The .NET DateTime.MinValue the host reports as `last` before a first run. */
const NEVER = "0001-01-01T00:00:00";
/** Longest single sleep: setTimeout overflows past ~24.8 days. */
const MAX_SLEEP_MS = 86_400_000;

/**
 * Parses a timer schedule.
 *
 * @throws Error naming the function when the expression is neither NCRONTAB nor a TimeSpan.
 */
export function parseSchedule(expression: string, functionName: string, timeZone = "UTC"): Schedule {
  const intervalMs = parseTimeSpanMs(expression);
  if (intervalMs !== undefined) {
    if (intervalMs <= 0)
      throw new Error(`Function "${functionName}": schedule "${expression}" must be a positive TimeSpan.`);
    return { next: (after) => new Date(after.getTime() + intervalMs) };
  }
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new Error(
      `Function "${functionName}": schedule "${expression}" must be NCRONTAB with six fields, seconds first (e.g. "*/30 * * * * *"), or a TimeSpan.`,
    );
  }
  try {
    CronExpressionParser.parse(expression, { tz: timeZone });
  } catch (error) {
    throw new Error(
      `Function "${functionName}": schedule "${expression}" is not a valid NCRONTAB expression: ${(error as Error).message}`,
    );
  }
  return {
    next: (after) => CronExpressionParser.parse(expression, { currentDate: after, tz: timeZone }).next().toDate(),
  };
}

/** Runs one timer-triggered function until stopped. */
export class TimerListener {
  private readonly controller = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly schedule: Schedule;
  private readonly runOnStartup: boolean;

  constructor(
    private readonly fn: RegisteredFunction,
    trigger: TriggerBinding,
    private readonly invoke: Invoker,
    env: Record<string, string | undefined>,
    private readonly lock?: ListenerLock,
  ) {
    const name = fn.metadata.name;
    const expression = stringProperty(trigger.binding, "schedule", env, name);
    if (expression === undefined) throw new Error(`Function "${name}": timer trigger has no schedule.`);
    this.schedule = parseSchedule(expression, name, env.WEBSITE_TIME_ZONE ?? "UTC");
    this.runOnStartup = trigger.binding.runOnStartup === true;
  }

  /** Starts firing at the schedule's occurrences. */
  start(): void {
    this.loop ??= this.run(this.controller.signal);
  }

  /** Stops scheduling and waits for a running invocation to end. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }

  private async run(signal: AbortSignal): Promise<void> {
    if (this.lock === undefined) await this.listen(signal);
    else await this.lock.hold(signal, (listening) => this.listen(listening));
  }

  /** Fires at the schedule's occurrences until `signal` fires (stop, or the listener lock was lost). */
  private async listen(signal: AbortSignal): Promise<void> {
    let last: Date | undefined;
    if (this.runOnStartup) {
      const now = new Date();
      await this.fire(now, last, "Timer fired at startup (runOnStartup)");
      last = now;
    }
    while (!signal.aborted) {
      const due = this.schedule.next(new Date());
      if (!(await sleepUntil(due, signal))) return;
      await this.fire(due, last, `Timer fired at ${due.toISOString()}`);
      last = due;
    }
  }

  private async fire(due: Date, last: Date | undefined, reason: string): Promise<void> {
    // The same JSON the host sends; the library camel-cases it into the handler's Timer object.
    const timerInfo = {
      Schedule: { AdjustForDST: true },
      ScheduleStatus: {
        Last: last?.toISOString() ?? NEVER,
        Next: this.schedule.next(due).toISOString(),
        LastUpdated: new Date().toISOString(),
      },
      IsPastDue: false,
    };
    await this.invoke(this.fn, { data: { json: JSON.stringify(timerInfo) }, reason });
  }
}

/** Sleeps until `due`; false when aborted first. */
async function sleepUntil(due: Date, signal: AbortSignal): Promise<boolean> {
  for (;;) {
    const remainingMs = due.getTime() - Date.now();
    if (remainingMs <= 0) return true;
    try {
      await delay(Math.min(remainingMs, MAX_SLEEP_MS), { abortSignal: signal });
    } catch {
      return false;
    }
  }
}
