import { resultOf } from "../../src/coordination/fold/readResult";
import { SimProcess } from "./network";
import { SimMessageQueue } from "./ports";
import { garbageText, namedPart, type Forgery } from "./garbage";
import type { SimWorld } from "./world";

/** A unit as a work message names it. */
interface SentUnit {
  jobId: string;
  first: number;
  count: number;
}

/**
 * What issue 43's garbage model does in the world (`garbage.ts`): forged results aimed at units the leader sent, sent
 * `delayMs` after each unit's send landed, from a process of their own or an instance's; and workers' results damaged
 * on their way (the one that lands is garbage naming the same unit). And what the invariant reads: every result that
 * landed on the results queue which the leader can read — read as the leader reads it (`resultOf`, its outcome blob
 * from the account) —, with the items it reports done or failed and when it landed.
 */
export class SimGarbage {
  private workSends = 0;
  private workerResults = 0;
  private readonly fired = new Set<Forgery>();
  /** Forged texts on their way: not a worker's result, whoever sends them. */
  private readonly forged = new Set<string>();
  private forger: SimMessageQueue | undefined;
  /** Per job, per item: when the first readable result reporting it done landed. */
  readonly reportedDone = new Map<string, Map<number, number>>();
  /** Per job: items a readable result reported failed (its worker's own failure, not an inference). */
  readonly reportedFailed = new Map<string, Set<number>>();
  /** Results that landed garbage (forged or damaged), for the failure messages. */
  readonly garbageLanded: { atMs: number; text: string; by: string }[] = [];

  constructor(private readonly world: SimWorld) {}

  /** Hooks the account's sends: each lands through {@link onSend}. */
  start(queues: { work: string; results: string }): void {
    const process = new SimProcess("forger", () => Date.now());
    this.world.operators.push(process);
    this.forger = new SimMessageQueue({ net: this.world.net, account: this.world.account, process }, queues.results);
    this.world.account.onSend = (queue, text, by) => {
      if (queue === queues.work) this.onWorkSend(text);
      if (queue !== queues.results) return text;
      const landed = this.damage(text, by);
      this.onResultLanded(landed, by);
      return landed;
    };
  }

  private onWorkSend(text: string): void {
    const unit = unitOf(text);
    if (unit === undefined) return;
    const n = ++this.workSends;
    for (const forgery of this.world.plan.garbage.forgeries) {
      if (this.fired.has(forgery) || !this.aims(forgery, n, unit)) continue;
      this.fired.add(forgery);
      const [first, count] = namedPart(forgery.part, unit.first, unit.count);
      const forged = garbageText(forgery.form, unit.jobId, first, count);
      setTimeout(() => {
        void this.sendForged(forgery.from, forged);
      }, forgery.delayMs);
    }
  }

  private aims(forgery: Forgery, n: number, unit: SentUnit): boolean {
    if ("nth" in forgery.target) return forgery.target.nth === n;
    const { jobs, plan } = this.world;
    const planned = jobs.filter((job) => plan.jobs.includes(job.plan));
    const job = planned[forgery.target.last % Math.max(1, planned.length)];
    return job?.id === unit.jobId && unit.first + unit.count === job.plan.items.length;
  }

  private async sendForged(from: number, text: string): Promise<void> {
    if (this.world.over) return;
    const instance = from < 0 ? undefined : this.world.instances[from % this.world.instances.length];
    const queue = instance === undefined ? this.forger : instance.app.resultsQueue;
    if (instance?.process.crashed === true) return;
    this.forged.add(text);
    await queue?.send([text]).catch(() => undefined);
  }

  /** A worker's result, as it lands: the plan's `damaged` ones are garbage naming the same unit. */
  private damage(text: string, by: string): string {
    if (this.forged.has(text) || by === "client") return text;
    const n = ++this.workerResults;
    const damaged = this.world.plan.garbage.damaged.find((d) => d.nth === n);
    const unit = damaged === undefined ? undefined : resultUnit(text);
    if (damaged === undefined || unit === undefined) return text;
    // It names its whole unit: a v1 result names one item, so a unit of several is damaged into another form.
    const form = damaged.form === "v1" && unit.count > 1 ? "shape" : damaged.form;
    this.world.lifecycle.onResultDamaged(unit);
    return garbageText(form, unit.jobId, unit.first, unit.count);
  }

  private onResultLanded(text: string, by: string): void {
    const atMs = Date.now();
    const message = { id: "landed", popReceipt: "", dequeueCount: 1, text, rawText: text, queuedMs: 0 };
    const system = this.world.account.containers.get(this.world.containers.system);
    void resultOf(message, (name) => {
      const blob = system?.blobs.get(name);
      return Promise.resolve({ text: blob?.text });
    }).then((read) => {
      if (read.ok !== true) {
        this.garbageLanded.push({ atMs, text: text.slice(0, 160), by });
        return;
      }
      const done = this.reportedDone.get(read.jobId) ?? new Map<number, number>();
      for (const item of read.outcome.done) if (!done.has(item)) done.set(item, atMs);
      this.reportedDone.set(read.jobId, done);
      const failed = this.reportedFailed.get(read.jobId) ?? new Set<number>();
      for (const { item } of read.outcome.failed) failed.add(item);
      this.reportedFailed.set(read.jobId, failed);
    });
  }
}

/** The unit a work message (v2) or one-item message (v1) names. */
function unitOf(text: string): SentUnit | undefined {
  const value = parse(text) as { jobId?: unknown; first?: unknown; item?: unknown; inputs?: unknown } | undefined;
  if (typeof value?.jobId !== "string") return undefined;
  const first = typeof value.first === "number" ? value.first : value.item;
  if (typeof first !== "number") return undefined;
  return { jobId: value.jobId, first, count: Array.isArray(value.inputs) ? value.inputs.length : 1 };
}

/** The unit a worker's result (v2) or one-item result (v1) reports on. */
function resultUnit(text: string): SentUnit | undefined {
  const value = parse(text) as { jobId?: unknown; first?: unknown; item?: unknown; count?: unknown } | undefined;
  if (typeof value?.jobId !== "string") return undefined;
  const first = typeof value.first === "number" ? value.first : value.item;
  if (typeof first !== "number") return undefined;
  return { jobId: value.jobId, first, count: typeof value.count === "number" ? value.count : 1 };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
