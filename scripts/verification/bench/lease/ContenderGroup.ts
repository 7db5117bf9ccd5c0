import { ContenderProcess } from "./ContenderProcess";
import type { ContenderMessage, Implementation } from "./protocol";

/** Options for {@link ContenderGroup.waitFor}. */
export interface WaitOptions {
  /** Only messages at or after this position of the group's log (see {@link ContenderGroup.mark}). */
  after: number;
  timeoutMs: number;
  /** What is awaited, for the timeout message. */
  what: string;
}

interface Waiter {
  after: number;
  predicate: (message: ContenderMessage) => boolean;
  resolve: (message: ContenderMessage) => void;
  reject: (error: Error) => void;
}

/**
 * The contenders of one implementation racing for one lease (their own container): spawns them, keeps the log of
 * what they printed, knows who leads, and fails every wait as soon as a contender errs or dies unexpectedly.
 */
export class ContenderGroup {
  /** Terms that ended for another reason than the benchmark's own release or kill (should stay empty). */
  readonly anomalies: string[] = [];
  private readonly log: ContenderMessage[] = [];
  private readonly waiters = new Set<Waiter>();
  private readonly contenders = new Map<string, ContenderProcess>();
  /** Contenders the benchmark itself is stopping: their exit is expected. */
  private readonly leaving = new Set<string>();
  private leaderId: string | undefined;
  private failure: Error | undefined;
  private spawned = 0;

  constructor(
    readonly impl: Implementation,
    readonly container: string,
    private readonly connectionString: string,
  ) {}

  /** The current end of the log: pass it as `after` to wait only for what happens from now on. */
  get mark(): number {
    return this.log.length;
  }

  /** Starts a contender and waits until it is ready to contend. */
  async spawn(timeoutMs: number): Promise<ContenderProcess> {
    this.spawned += 1;
    const id = `${this.impl}-${this.container.split("-").at(-1) ?? ""}-${this.spawned}`;
    const after = this.mark;
    const contender = new ContenderProcess({
      impl: this.impl,
      id,
      connectionString: this.connectionString,
      container: this.container,
      onMessage: (message) => {
        this.record(message);
      },
      onClose: (closed, code, signal) => {
        this.contenders.delete(closed.id);
        if (this.leaderId === closed.id) this.leaderId = undefined;
        if (!this.leaving.has(closed.id)) {
          this.fail(
            new Error(
              `Contender ${closed.id} exited unexpectedly (code ${code ?? "none"}, signal ${signal ?? "none"}). Its last output:\n${closed.diagnostics}`,
            ),
          );
        }
      },
    });
    this.contenders.set(id, contender);
    await this.waitFor((message) => message.type === "ready" && message.id === id, {
      after,
      timeoutMs,
      what: `${id} to start`,
    });
    return contender;
  }

  /** The leader, waiting for one if nobody leads right now. */
  async currentLeader(timeoutMs: number): Promise<ContenderProcess> {
    const known = this.leaderId === undefined ? undefined : this.contenders.get(this.leaderId);
    if (known?.isRunning) return known;
    const acquired = await this.waitFor((message) => message.type === "acquired", {
      after: this.mark,
      timeoutMs,
      what: `a ${this.impl} leader`,
    });
    const leader = this.contenders.get(acquired.id);
    if (leader === undefined) throw new Error(`${acquired.id} reported a term but is no longer running.`);
    return leader;
  }

  /** Marks a contender as leaving on the benchmark's request, so its exit is not a failure. */
  expectExit(contender: ContenderProcess): void {
    this.leaving.add(contender.id);
    if (this.leaderId === contender.id) this.leaderId = undefined;
  }

  /** Resolves with the first message at or after `options.after` that matches; rejects on timeout or failure. */
  waitFor(predicate: (message: ContenderMessage) => boolean, options: WaitOptions): Promise<ContenderMessage> {
    if (this.failure) return Promise.reject(this.failure);
    const found = this.log.slice(options.after).find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new Error(
            `Timed out after ${options.timeoutMs} ms waiting for ${options.what} (container ${this.container}).`,
          ),
        );
      }, options.timeoutMs);
      const waiter: Waiter = {
        after: options.after,
        predicate,
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.waiters.add(waiter);
    });
  }

  /** Kills every contender of the group and waits until they are gone. */
  async stop(): Promise<void> {
    const all = [...this.contenders.values()];
    for (const contender of all) {
      this.expectExit(contender);
      contender.kill();
    }
    await Promise.all(all.map((contender) => contender.closed));
  }

  private record(message: ContenderMessage): void {
    const position = this.log.length;
    this.log.push(message);
    switch (message.type) {
      case "acquired":
        if (
          this.leaderId !== undefined &&
          this.leaderId !== message.id &&
          this.contenders.get(this.leaderId)?.isRunning === true &&
          !this.leaving.has(this.leaderId)
        ) {
          this.anomalies.push(`${message.id} began a term at ${message.t} while ${this.leaderId} was still leading`);
        }
        this.leaderId = message.id;
        break;
      case "lost":
        this.anomalies.push(`${message.id} lost its term at ${message.t}: ${message.detail}`);
        if (this.leaderId === message.id) this.leaderId = undefined;
        break;
      case "released":
      case "stopped":
        if (this.leaderId === message.id) this.leaderId = undefined;
        break;
      case "error":
        this.fail(new Error(`Contender ${message.id} failed: ${message.message}`));
        break;
      case "ready":
        break;
    }
    for (const waiter of this.waiters) {
      if (position >= waiter.after && waiter.predicate(message)) {
        this.waiters.delete(waiter);
        waiter.resolve(message);
      }
    }
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const waiter of this.waiters) waiter.reject(error);
    this.waiters.clear();
  }
}
