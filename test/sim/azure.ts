/**
 * The simulator's storage account: blob leases, blobs with ETags and metadata, and queues, with the answers Azure
 * Storage gives (status + error code). Server side only — what a request does once it lands. The per-instance ports
 * in `ports.ts` map these answers exactly as the real adapters in `src/` map the SDK's errors.
 *
 * Lease rules (Azure "Lease Blob" operation, outcomes table):
 * - acquire: available / expired / broken → leased; leased with the same id → renewed; leased with another id →
 *   409 LeaseAlreadyPresent; breaking → 409 LeaseIsBreakingAndCannotBeAcquired.
 * - renew: leased or expired with the same id (not taken by anyone since) → leased; breaking → 409
 *   LeaseIsBreakingAndCannotBeRenewed; broken → 409 LeaseIsBrokenAndCannotBeRenewed; another id → 409
 *   LeaseIdMismatchWithLeaseOperation; none → 409 LeaseNotPresentWithLeaseOperation.
 * - release: same id while leased, expired, breaking or broken → available; otherwise 409.
 * - break: leased → breaking for min(period, time left), or broken at once with period 0; expired → broken;
 *   available → 409 LeaseNotPresentWithLeaseOperation.
 * - a write conditioned on a lease id: active lease (leased / breaking) with that id → ok; another id → 412
 *   LeaseIdMismatchWithBlobOperation; no active lease → 412 LeaseNotPresentWithBlobOperation.
 * Queues: receive hides a message for the visibility timeout and gives a new pop receipt; delete or update with a
 * stale pop receipt → 400 PopReceiptMismatch, of a message that is gone → 404 MessageNotFound. Delivery order is not
 * FIFO (Azure promises none): each receive takes the visible messages in an order drawn from the run's random source.
 */

/** A storage answer other than success. */
export class AzureError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: string,
  ) {
    super(`${statusCode} ${code}`);
    this.name = "AzureError";
  }
}

type LeaseStatus = "available" | "leased" | "expired" | "breaking" | "broken";

interface Blob {
  text: string;
  etag: string;
  metadata: Record<string, string>;
  lease: {
    id: string | undefined;
    status: "available" | "leased" | "breaking" | "broken";
    expiresAtMs: number;
    breakEndsAtMs: number;
    durationS: number;
  };
}

/** One blob container. */
export class Container {
  readonly blobs = new Map<string, Blob>();
  constructor(readonly name: string) {}
}

/** A landed write, for the invariants. */
export interface WriteRecord {
  container: string;
  name: string;
  /** Epoch metadata of a state write, when any. */
  epoch: number | undefined;
  atMs: number;
  by: string;
  kind: "write" | "delete";
}

/** The storage account. `now` is the simulation's global (true) clock. */
export class StorageAccount {
  readonly containers = new Map<string, Container>();
  readonly queues = new Map<string, SimQueue>();
  readonly writes: WriteRecord[] = [];
  /** Messages the instances' ports put on the work queue, as they landed (decoded), for the re-send invariant. */
  readonly workSends: { text: string; by: string; atMs: number }[] = [];
  /**
   * Told of every message an instance's (or the forger's) port sends, as it lands, decoded; answers the text that
   * lands (issue 43's model damages some workers' results on their way: `garbageWorld.ts`).
   */
  onSend: ((queue: string, text: string, by: string) => string) | undefined = undefined;
  /**
   * Breaks that ended an active lease, for the takeover invariant: the lease id they ended, the blob's metadata then
   * (the record of the term that wrote last), and whether the break was conditional (a takeover's).
   */
  readonly breaks: {
    atMs: number;
    leaseId: string | undefined;
    metadata: Record<string, string>;
    conditional: boolean;
  }[] = [];
  /** Blobs under a legal hold or an immutability policy (`container/name`): every delete answers 409. */
  readonly held = new Set<string>();
  /** Deletes of held blobs, refused. */
  readonly refusedDeletes: { container: string; name: string; atMs: number; by: string }[] = [];
  private version = 0;

  constructor(
    readonly now: () => number,
    readonly random: () => number,
  ) {}

  // ---- containers and blobs ----

  container(name: string): Container {
    const container = this.containers.get(name);
    if (container === undefined) throw new AzureError(404, "ContainerNotFound");
    return container;
  }

  createContainer(name: string): void {
    if (this.containers.has(name)) throw new AzureError(409, "ContainerAlreadyExists");
    this.containers.set(name, new Container(name));
  }

  deleteContainer(name: string): void {
    this.containers.delete(name);
  }

  private blob(container: string, name: string): Blob {
    const blob = this.container(container).blobs.get(name);
    if (blob === undefined) throw new AzureError(404, "BlobNotFound");
    return blob;
  }

  /** Reads a blob: text, ETag, metadata and lease state. */
  getBlob(
    container: string,
    name: string,
  ): { text: string; etag: string; metadata: Record<string, string>; leaseState: LeaseStatus } {
    const blob = this.blob(container, name);
    return { text: blob.text, etag: blob.etag, metadata: { ...blob.metadata }, leaseState: this.leaseStatus(blob) };
  }

  /** Uploads a blob (Put Blob), optionally conditional; a leased blob needs its lease id. */
  putBlob(
    container: string,
    name: string,
    text: string,
    options: {
      metadata?: Record<string, string>;
      ifMatch?: string;
      ifNoneMatch?: "*";
      leaseId?: string;
      by: string;
      epoch?: number;
    },
  ): { etag: string } {
    const c = this.container(container);
    const existing = c.blobs.get(name);
    if (options.ifNoneMatch === "*" && existing !== undefined) throw new AzureError(409, "BlobAlreadyExists");
    if (options.ifMatch !== undefined && existing?.etag !== options.ifMatch)
      throw new AzureError(
        existing === undefined ? 404 : 412,
        existing === undefined ? "BlobNotFound" : "ConditionNotMet",
      );
    if (existing !== undefined) this.checkLeaseForWrite(existing, options.leaseId);
    const etag = this.nextEtag();
    const lease = existing?.lease ?? {
      id: undefined,
      status: "available",
      expiresAtMs: 0,
      breakEndsAtMs: 0,
      durationS: 0,
    };
    c.blobs.set(name, { text, etag, metadata: { ...(options.metadata ?? {}) }, lease });
    this.writes.push({ container, name, epoch: options.epoch, atMs: this.now(), by: options.by, kind: "write" });
    return { etag };
  }

  /** Set Blob Metadata, optionally conditional on an ETag or a lease id. */
  setMetadata(
    container: string,
    name: string,
    metadata: Record<string, string>,
    options: { ifMatch?: string; leaseId?: string },
  ): void {
    const blob = this.blob(container, name);
    if (options.ifMatch !== undefined && blob.etag !== options.ifMatch) throw new AzureError(412, "ConditionNotMet");
    this.checkLeaseForWrite(blob, options.leaseId);
    blob.metadata = { ...metadata };
    blob.etag = this.nextEtag();
  }

  deleteBlob(container: string, name: string, by: string, conditions: { ifMatch?: string } = {}): void {
    const c = this.container(container);
    const blob = c.blobs.get(name);
    if (blob === undefined) throw new AzureError(404, "BlobNotFound");
    if (conditions.ifMatch !== undefined && conditions.ifMatch !== blob.etag)
      throw new AzureError(412, "ConditionNotMet");
    if (this.held.has(`${container}/${name}`)) {
      this.refusedDeletes.push({ container, name, atMs: this.now(), by });
      throw new AzureError(409, "BlobImmutableDueToLegalHold");
    }
    const status = this.leaseStatus(blob);
    if (status === "leased" || status === "breaking") throw new AzureError(412, "LeaseIdMissing");
    c.blobs.delete(name);
    this.writes.push({ container, name, epoch: undefined, atMs: this.now(), by, kind: "delete" });
  }

  listBlobs(container: string, prefix: string, max: number): string[] {
    return [...this.container(container).blobs.keys()]
      .filter((name) => name.startsWith(prefix))
      .sort()
      .slice(0, max);
  }

  // ---- leases ----

  leaseStatus(blob: Blob): LeaseStatus {
    const now = this.now();
    const { lease } = blob;
    if (lease.status === "leased" && now >= lease.expiresAtMs) return "expired";
    if (lease.status === "breaking" && now >= lease.breakEndsAtMs) return "broken";
    return lease.status;
  }

  acquireLease(container: string, name: string, leaseId: string, durationS: number): void {
    const blob = this.blob(container, name);
    const status = this.leaseStatus(blob);
    if (status === "breaking") throw new AzureError(409, "LeaseIsBreakingAndCannotBeAcquired");
    if (status === "leased" && blob.lease.id !== leaseId) throw new AzureError(409, "LeaseAlreadyPresent");
    blob.lease = {
      id: leaseId,
      status: "leased",
      expiresAtMs: this.now() + durationS * 1000,
      breakEndsAtMs: 0,
      durationS,
    };
  }

  renewLease(container: string, name: string, leaseId: string): void {
    const blob = this.blob(container, name);
    const status = this.leaseStatus(blob);
    if (status === "breaking") throw new AzureError(409, "LeaseIsBreakingAndCannotBeRenewed");
    if (status === "broken") throw new AzureError(409, "LeaseIsBrokenAndCannotBeRenewed");
    if (status === "available") throw new AzureError(409, "LeaseNotPresentWithLeaseOperation");
    if (blob.lease.id !== leaseId) throw new AzureError(409, "LeaseIdMismatchWithLeaseOperation");
    blob.lease = { ...blob.lease, status: "leased", expiresAtMs: this.now() + blob.lease.durationS * 1000 };
  }

  releaseLease(container: string, name: string, leaseId: string): void {
    const blob = this.blob(container, name);
    const status = this.leaseStatus(blob);
    if (status === "available") throw new AzureError(409, "LeaseNotPresentWithLeaseOperation");
    if (blob.lease.id !== leaseId) throw new AzureError(409, "LeaseIdMismatchWithLeaseOperation");
    blob.lease = { id: undefined, status: "available", expiresAtMs: 0, breakEndsAtMs: 0, durationS: 0 };
  }

  /** `ifMatch`: a conditional break (412 ConditionNotMet when the blob's ETag differs), as a takeover sends it. */
  breakLease(container: string, name: string, breakPeriodS: number, ifMatch?: string): void {
    const blob = this.blob(container, name);
    if (ifMatch !== undefined && blob.etag !== ifMatch) throw new AzureError(412, "ConditionNotMet");
    const status = this.leaseStatus(blob);
    const now = this.now();
    if (status === "available") throw new AzureError(409, "LeaseNotPresentWithLeaseOperation");
    if (status === "leased" || status === "breaking")
      this.breaks.push({
        atMs: now,
        leaseId: blob.lease.id,
        metadata: { ...blob.metadata },
        conditional: ifMatch !== undefined,
      });
    if (status === "expired" || status === "broken" || breakPeriodS === 0) {
      blob.lease = { ...blob.lease, status: "broken", breakEndsAtMs: now };
      return;
    }
    const endsAt =
      status === "breaking"
        ? Math.min(blob.lease.breakEndsAtMs, now + breakPeriodS * 1000)
        : Math.min(blob.lease.expiresAtMs, now + breakPeriodS * 1000);
    blob.lease = { ...blob.lease, status: "breaking", breakEndsAtMs: endsAt };
  }

  private checkLeaseForWrite(blob: Blob, leaseId: string | undefined): void {
    const status = this.leaseStatus(blob);
    const active = status === "leased" || status === "breaking";
    if (leaseId === undefined) {
      if (active) throw new AzureError(412, "LeaseIdMissing");
      return;
    }
    if (!active) throw new AzureError(412, "LeaseNotPresentWithBlobOperation");
    if (blob.lease.id !== leaseId) throw new AzureError(412, "LeaseIdMismatchWithBlobOperation");
  }

  private nextEtag(): string {
    return `"0x${(++this.version).toString(16)}"`;
  }

  // ---- queues ----

  queue(name: string): SimQueue {
    let queue = this.queues.get(name);
    if (queue === undefined) {
      queue = new SimQueue(name, this.now, this.random);
      this.queues.set(name, queue);
    }
    return queue;
  }
}

/** A stored queue message. */
interface StoredMessage {
  id: string;
  body: string;
  /** When it was sent (storage's insertion time). */
  insertedAtMs: number;
  visibleAtMs: number;
  dequeueCount: number;
  popReceipt: string;
}

/** One storage queue (created on first use, as every queue of the app is created on demand). */
export class SimQueue {
  readonly messages: StoredMessage[] = [];
  private next = 0;
  /** Probability that a received message also stays visible (Azure delivers at least once). */
  duplicateRate = 0;

  constructor(
    readonly name: string,
    private readonly now: () => number,
    private readonly random: () => number,
  ) {}

  send(body: string, visibilityDelayS = 0): void {
    this.sendHidden(body, visibilityDelayS);
  }

  /** Put Message, answering with the message's id and a pop receipt (which Update and Delete Message take). */
  sendHidden(body: string, visibilityDelayS: number): { id: string; popReceipt: string } {
    const id = `${this.name}#${++this.next}`;
    const popReceipt = `${id}@${++this.next}`;
    this.messages.push({
      id,
      body,
      insertedAtMs: this.now(),
      visibleAtMs: this.now() + visibilityDelayS * 1000,
      dequeueCount: 0,
      popReceipt,
    });
    return { id, popReceipt };
  }

  receive(
    max: number,
    visibilityTimeoutS: number,
  ): { id: string; popReceipt: string; dequeueCount: number; body: string; queuedMs: number }[] {
    const now = this.now();
    const visible = this.messages.filter((m) => m.visibleAtMs <= now);
    // No FIFO promise: a random order of the visible messages.
    for (let i = visible.length - 1; i > 0; i--) {
      const j = Math.floor(this.random() * (i + 1));
      const a = visible[i];
      const b = visible[j];
      if (a !== undefined && b !== undefined) {
        visible[i] = b;
        visible[j] = a;
      }
    }
    const out = [];
    for (const message of visible.slice(0, max)) {
      message.dequeueCount++;
      message.popReceipt = `${message.id}@${++this.next}`;
      out.push({
        id: message.id,
        popReceipt: message.popReceipt,
        dequeueCount: message.dequeueCount,
        body: message.body,
        queuedMs: now - message.insertedAtMs,
      });
      message.visibleAtMs = now + visibilityTimeoutS * 1000;
      if (this.random() < this.duplicateRate) this.send(message.body); // delivered twice: at-least-once
    }
    return out;
  }

  delete(id: string, popReceipt: string): void {
    const index = this.messages.findIndex((m) => m.id === id);
    const message = this.messages[index];
    if (message === undefined) throw new AzureError(404, "MessageNotFound");
    if (message.popReceipt !== popReceipt) throw new AzureError(400, "PopReceiptMismatch");
    this.messages.splice(index, 1);
  }

  /** Peek Messages: visible ones, changing nothing. */
  peek(max: number): { id: string; dequeueCount: number; body: string }[] {
    const now = this.now();
    return this.messages
      .filter((m) => m.visibleAtMs <= now)
      .slice(0, max)
      .map((m) => ({ id: m.id, dequeueCount: m.dequeueCount, body: m.body }));
  }

  /** Update Message: a new visibility timeout; returns the new pop receipt. */
  update(id: string, popReceipt: string, visibilityTimeoutS: number, body?: string): string {
    const message = this.messages.find((m) => m.id === id);
    if (message === undefined) throw new AzureError(404, "MessageNotFound");
    if (message.popReceipt !== popReceipt) throw new AzureError(400, "PopReceiptMismatch");
    if (body !== undefined) message.body = body;
    message.visibleAtMs = this.now() + visibilityTimeoutS * 1000;
    message.popReceipt = `${message.id}@${++this.next}`;
    return message.popReceipt;
  }

  /** Messages no one is processing right now (visible now). */
  visibleCount(): number {
    const now = this.now();
    return this.messages.filter((m) => m.visibleAtMs <= now).length;
  }
}
