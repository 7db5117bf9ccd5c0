import { CronExpressionParser } from "cron-parser";
import { delay, parseTimeSpanMs } from "azure-leader-coordinator/internal";
import { stringProperty, type TriggerBinding } from "./bindings.js";
import type { Invoker } from "./invoke.js";
import type { ListenerLock } from "./listenerLock.js";
import type { RegisteredFunction } from "./registrations.js";
import {
  checkPastDue,
  monitorsSchedule,
  NEVER,
  statusJson,
  type Schedule,
  type ScheduleStatus,
} from "./scheduleMonitor.js";
import type { ScheduleStatusBlob } from "./scheduleStatusBlob.js";

/**
 * Timer triggers as the host runs them (the WebJobs SDK's TimerListener; each behaviour a row of `npm run
 * conformance:host`): NCRONTAB with seconds (`*\/5 * * * * *`; five fields also parse, seconds 0) or a TimeSpan
 * (`"00:00:30"`), `%AppSetting%` allowed, times in UTC unless WEBSITE_TIME_ZONE says otherwise. After each invocation
 * the next occurrence is computed from the invocation's start (or its occurrence, if it fired a moment early), so
 * invocations never overlap, and one that outlasted the interval is followed at once, the occurrences it overran
 * skipped. `runOnStartup` fires once each time the listener starts.
 *
 * A schedule that fires at most once a minute is monitored (`scheduleMonitor.ts`): its status is kept in host storage
 * (`scheduleStatusBlob.ts`), and when the listener starts after an occurrence was missed — no instance held the
 * listener lock then, e.g. the holder died — the missed occurrence runs at once with `isPastDue` true. The function's
 * Timer object carries that status; an unmonitored timer's `scheduleStatus` is null, as in the host.
 *
 * With a {@link ListenerLock} (the host passes one when host storage, AzureWebJobsStorage, is set) the listener runs
 * only while this instance holds the app's lock, as in Azure: one instance per app fires the timer. Without one,
 * every instance fires it, like separate function apps, and nothing is monitored.
 */

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
    return { next: (after) => new Date(after.getTime() + intervalMs), intervalMs };
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

/** Why an invocation runs outside its schedule (the SDK's UnscheduledInvocationReason), if it does. */
type Unscheduled = "IsPastDue" | "RunOnStartup" | undefined;

/** Runs one timer-triggered function until stopped. */
export class TimerListener {
  private readonly controller = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly schedule: Schedule;
  private readonly runOnStartup: boolean;
  /** Where the status is kept, when the schedule is monitored (and there is host storage). */
  private readonly statusStore: ScheduleStatusBlob | undefined;

  constructor(
    private readonly fn: RegisteredFunction,
    trigger: TriggerBinding,
    private readonly invoke: Invoker,
    env: Record<string, string | undefined>,
    private readonly lock?: ListenerLock,
    statusStore?: ScheduleStatusBlob,
  ) {
    const name = fn.metadata.name;
    const expression = stringProperty(trigger.binding, "schedule", env, name);
    if (expression === undefined) throw new Error(`Function "${name}": timer trigger has no schedule.`);
    const timeZone = env.WEBSITE_TIME_ZONE ?? "UTC";
    this.schedule = parseSchedule(expression, name, timeZone);
    this.runOnStartup = trigger.binding.runOnStartup === true;
    const monitored = monitorsSchedule(expression, this.schedule, {
      useMonitor: trigger.binding.useMonitor,
      timeZone,
      now: new Date(),
    });
    this.statusStore = monitored ? statusStore : undefined;
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

  /**
   * What the SDK's listener does when it starts: a monitored timer reads its status and checks it for a missed
   * occurrence (storing a first status, or one reset by a changed schedule); an unmonitored one starts blank.
   */
  private async startStatus(signal: AbortSignal): Promise<{ status: ScheduleStatus; pastDue: boolean }> {
    const now = new Date();
    if (this.statusStore === undefined)
      return { status: { last: NEVER, next: this.schedule.next(now), lastUpdated: NEVER }, pastDue: false };
    const check = checkPastDue(await this.statusStore.read({ abortSignal: signal }), now, this.schedule);
    if (check.write !== undefined) await this.statusStore.write(check.write, { abortSignal: signal });
    return { status: check.status, pastDue: check.pastDueMs > 0 };
  }

  /** Fires at the schedule's occurrences until `signal` fires (stop, or the listener lock was lost). */
  private async listen(signal: AbortSignal): Promise<void> {
    const started = await this.startStatus(signal);
    let status = started.status;
    let unscheduled: Unscheduled = started.pastDue ? "IsPastDue" : this.runOnStartup ? "RunOnStartup" : undefined;
    while (!signal.aborted) {
      // Due at once when the next occurrence has passed (an invocation that outlasted the interval).
      if (unscheduled === undefined && !(await sleepUntil(status.next, signal))) return;
      const invokedAt = new Date();
      await this.fire(status, unscheduled, invokedAt);
      // From the invocation's start — or its occurrence, if the timer fired a moment early — as the SDK counts.
      const from = unscheduled === undefined && status.next > invokedAt ? status.next : invokedAt;
      status = { last: from, next: this.schedule.next(from), lastUpdated: from };
      unscheduled = undefined;
      await this.statusStore?.write(status, { abortSignal: signal });
    }
  }

  private async fire(status: ScheduleStatus, unscheduled: Unscheduled, invokedAt: Date): Promise<void> {
    // The same JSON the host sends; the library camel-cases it into the handler's Timer object.
    const timerInfo = {
      Schedule: { AdjustForDST: true },
      ScheduleStatus: this.statusStore === undefined ? null : statusJson(status),
      IsPastDue: unscheduled === "IsPastDue",
    };
    const reason =
      unscheduled === "IsPastDue"
        ? `Timer fired at ${invokedAt.toISOString()} (past due: the occurrence of ${status.next.toISOString()} was missed)`
        : unscheduled === "RunOnStartup"
          ? "Timer fired at startup (runOnStartup)"
          : `Timer fired at ${status.next.toISOString()}`;
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
