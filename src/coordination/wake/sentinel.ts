import { delay, type Abortable } from "../../library/util/delay.js";
import type { Logger } from "../../library/util/logger.js";
import type { MessageQueue, MessageReceipt } from "../ports/ports.js";
import { wakeMessageText } from "./wake.js";

/**
 * The leader's sentinel: a dead man's switch on the wake queue. While its step has active jobs, the leader keeps one
 * wake-up (`leader-sentinel`) on the wake queue, hidden: sent invisible for `hiddenS` seconds, then hidden again for
 * `hiddenS` every `hiddenS / 2`. A leader that dies, or freezes, stops hiding it, and within `hiddenS` it surfaces:
 * some instance's `wake` function receives it, even when no other instance had anything to do — the case the leader
 * watcher alone misses, when the dead leader's own process held every unit in flight and nobody else was busy. That
 * wake-up arms its process's leader watcher, which takes over once the holder has been silent long enough (with
 * takeover), and its attempt acquires at once if the lease has run out. A step that ends with jobs still active
 * leaves its sentinel to surface as well, and it starts the next step; a step that ends with none deletes it. So a
 * wake-up that finds a live leader need not send follow-ups to cover that leader's death or its step's end
 * (`handleWakeMessage`).
 *
 * Cost, while a leader has active jobs: one queue operation every `hiddenS / 2` (3,600 an hour at 2 s), and a send
 * and a delete per step. Nothing when no job is active: the idle cost is unchanged.
 */

/** Options of {@link LeaderSentinel}. */
export interface SentinelOptions {
  /**
   * How long the sentinel stays hidden after each hiding, in whole seconds (Azure's unit); it is hidden again twice as
   * often.
   */
  hiddenS: number;
  /** This instance's id, for the wake-up's `from`. */
  from: string;
  /** Where a failure to send, hide or delete it is logged (as a warning: the next attempt may do). */
  logger: Logger;
  /** Wall clock, for the wake-up's `sentAtMs`. @default Date.now */
  now?: () => number;
}

/** What a sentinel did, for tests and benchmarks. */
export interface SentinelStats {
  /** Wake-ups sent visible when armed with `announce`. */
  announced: number;
  sent: number;
  hidden: number;
  deleted: number;
  failures: number;
}

/** One step's sentinel (see the module comment): armed by the step, ended by whoever ran the step. */
export class LeaderSentinel {
  readonly stats: SentinelStats = { announced: 0, sent: 0, hidden: 0, deleted: 0, failures: 0 };
  /** The sentinel's latest receipt; undefined before it was sent, and once it is known to be no longer ours. */
  private receipt: MessageReceipt | undefined;
  private loop: Promise<void> | undefined;
  /** Stops the loop between requests ({@link end}); a request in flight runs to its answer. */
  private readonly stopped = new AbortController();
  /** The term's signal: aborts requests in flight (the term is over). */
  private termSignal: AbortSignal | undefined;

  constructor(
    private readonly queue: MessageQueue,
    private readonly options: SentinelOptions,
  ) {}

  /** Whether {@link arm} has been called (and the sentinel not ended). */
  get armed(): boolean {
    return this.loop !== undefined;
  }

  /**
   * Sends the sentinel, hidden, and keeps it hidden until {@link end} or until `abortSignal` fires (the term ended: it
   * is left to surface). Calling it again does nothing. With `announce` (the step has just registered a job: the other
   * instances may have been idle, so none is watching), it first sends one wake-up visible at once: whichever instance
   * receives it starts watching the leader now, before anything can happen to it, rather than when the hidden one
   * surfaces after a death (a watcher that has read the leader's heartbeat before breaks about 2 s sooner). One wake-up
   * execution per step that registers jobs.
   */
  arm(options: Abortable & { announce?: boolean } = {}): void {
    if (this.loop !== undefined || this.stopped.signal.aborted) return;
    this.termSignal = options.abortSignal;
    const loopSignal =
      options.abortSignal === undefined
        ? this.stopped.signal
        : AbortSignal.any([options.abortSignal, this.stopped.signal]);
    this.loop = (options.announce === true ? this.announce() : Promise.resolve()).then(() =>
      this.keepHidden(loopSignal),
    );
  }

  /**
   * Stops hiding it, after the request in flight (if any) has answered. Then: with `remove`, deletes it (no job is
   * left to look after); otherwise leaves it to surface in `surfaceInS` (@default `hiddenS`) and start the next step —
   * and if there is no sentinel to leave (every send failed, or it was taken and the new one not sent), sends a plain
   * delayed wake-up instead, so the next step still comes. Never throws: a failure is logged, and costs at most one
   * harmless wake-up (a sentinel not deleted) or a wait for the timer (no wake-up could be sent at all).
   */
  async end(options: { remove: boolean; surfaceInS?: number }): Promise<void> {
    this.stopped.abort();
    await this.loop;
    const { receipt } = this;
    this.receipt = undefined;
    if (this.loop === undefined) return; // never armed: no job was active
    const surfaceInS = options.surfaceInS ?? this.options.hiddenS;
    try {
      if (options.remove) {
        if (receipt !== undefined && (await this.queue.delete(receipt, this.io()))) this.stats.deleted++;
      } else if (receipt === undefined) {
        await this.queue.send([this.text()], { ...this.io(), visibilityDelayS: surfaceInS });
        this.stats.sent++;
      } else if (surfaceInS !== this.options.hiddenS) {
        if ((await this.queue.hide(receipt, surfaceInS, this.io())) !== undefined) this.stats.hidden++;
      }
    } catch (error) {
      this.failed(options.remove ? "delete" : "leave", error);
    }
  }

  private async keepHidden(loopSignal: AbortSignal): Promise<void> {
    const { hiddenS } = this.options;
    const everyMs = (hiddenS * 1000) / 2;
    // Read through a function: the signal fires while requests are awaited.
    const stopped = (): boolean => loopSignal.aborted;
    while (!stopped()) {
      let what = "hide";
      try {
        // Hidden again with a fresh body: when it surfaces, its `sentAtMs` tells how long it waited to be received.
        const kept =
          this.receipt === undefined ? undefined : await this.queue.hide(this.receipt, hiddenS, this.io(this.text()));
        if (kept !== undefined) {
          this.receipt = kept;
          this.stats.hidden++;
        } else {
          // First time, or it surfaced meanwhile (this process was held up) and someone took it: a new one.
          what = "send";
          this.receipt = undefined;
          this.receipt = await this.queue.sendHidden(this.text(), hiddenS, this.io());
          this.stats.sent++;
        }
      } catch (error) {
        if (this.termSignal?.aborted === true) return;
        this.failed(what, error);
      }
      try {
        await delay(everyMs, { abortSignal: loopSignal });
      } catch {
        return;
      }
    }
  }

  private async announce(): Promise<void> {
    try {
      await this.queue.send([this.text()], this.io());
      this.stats.announced++;
    } catch (error) {
      if (this.termSignal?.aborted !== true) this.failed("announce", error);
    }
  }

  /** The sentinel's body, stamped now. */
  private text(): string {
    return wakeMessageText({ reason: "leader-sentinel", from: this.options.from }, this.options.now);
  }

  /**
   * Options of one request: under the term's signal, and at most `hiddenS` long (a hide that answers later than that
   * comes too late anyway; a hung one must not hold the step's end). With `text`, a new body.
   */
  private io(text?: string): Abortable & { text?: string } {
    // On the process's setTimeout, not AbortSignal.timeout: a fake clock (the simulator's, a test's) replaces the
    // former only, and a timeout on real time made the simulator's runs depend on the machine's load.
    const timeout = abortAfter(this.options.hiddenS * 1000);
    const abortSignal = this.termSignal === undefined ? timeout : AbortSignal.any([this.termSignal, timeout]);
    return text === undefined ? { abortSignal } : { abortSignal, text };
  }

  private failed(what: string, error: unknown): void {
    this.stats.failures++;
    this.options.logger.warn(
      `Instance ${this.options.from} could not ${what} its sentinel wake-up: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId: this.options.from },
    );
  }
}

/** A signal that aborts after `ms` on `setTimeout` (unref'd: it keeps no process alive). */
function abortAfter(ms: number): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("The operation timed out.", "TimeoutError")), ms);
  timer.unref();
  return controller.signal;
}
