import { randomUUID } from "node:crypto";
import type {
  BlobFiles,
  MessageQueue,
  MessageReceipt,
  OpenedBlob,
  PeekedMessage,
  ReceivedMessage,
  SendOptions,
} from "../../src/coordination/ports/ports";
import { ConcurrentUpdateError, LeadershipLostError, StorageError } from "../../src/library/errors";
import type {
  StateStore,
  StoredState,
  StoredSummary,
  WriteCondition,
  WriteOptions,
} from "../../src/library/fencing/StateStore";
import {
  EMPTY_RECORD,
  type AcquireResult,
  type BreakOutcome,
  type LeaderRecord,
  type LeaseSnapshot,
  type HonourOptions,
  type LeaseStore,
  type Revocation,
} from "../../src/library/lease/LeaseStore";
import { decodeBody, encodeBody } from "../../src/azure/StorageQueue";
import { parseRecord, recordMetadata } from "../../src/azure/leaseMetadata";
import { abortReason } from "../../src/library/util/delay";
import { AzureError, type StorageAccount } from "./azure";
import type { Network, SimProcess } from "./network";
import type { Abortable } from "../../src/library/util/delay";

/**
 * The app's storage ports for one simulated process, over the simulated storage account. Each maps storage's answers
 * exactly as its adapter in `src/` maps the SDK's (BlobLeaseStore, BlobStateStore, BlobFilesStore, StorageQueue):
 * which status codes are "not acquired", "lost", a no-op or a ConcurrentUpdateError, and which become StorageError.
 */

/** As `toLibraryError`: the caller's abort passes through; a storage answer becomes a StorageError. */
function libraryError(error: unknown, operation: string, signal: AbortSignal | undefined): Error {
  if (signal?.aborted) return abortReason(signal);
  if (error instanceof AzureError)
    return new StorageError(
      error.code,
      error.statusCode,
      `${operation} failed: storage answered ${error.statusCode} ${error.code}.`,
      { cause: error },
    );
  if (error instanceof StorageError || error instanceof LeadershipLostError) return error;
  return error instanceof Error ? error : new Error(String(error));
}

const status = (error: unknown): number | undefined => (error instanceof AzureError ? error.statusCode : undefined);
const code = (error: unknown): string | undefined => (error instanceof AzureError ? error.code : undefined);

/** What every port of a process shares. */
export interface PortContext {
  net: Network;
  account: StorageAccount;
  process: SimProcess;
}

const META = {
  holder: "holder",
  epoch: "epoch",
  sinceMs: "sincems",
  transitions: "transitions",
  revokedEpoch: "revokedepoch",
  honoured: "honoured",
  requestId: "requestid",
} as const;

function count(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) && parsed >= 0 ? parsed : undefined;
}

/**
 * The lease port (BlobLeaseStore's semantics): the record in the lease blob's metadata, requests in
 * `<blob>.revocation`.
 */
export class SimLeaseStore implements LeaseStore {
  readonly name: string;
  private readonly revocationBlob: string;

  constructor(
    private readonly ctx: PortContext,
    private readonly containerName = "leases",
    private readonly blobName = "MyLeaderCoordinatorTask",
  ) {
    this.name = `${containerName}/${blobName}`;
    this.revocationBlob = `${blobName}.revocation`;
  }

  private call<T>(label: string, effect: () => T, options: Abortable | undefined): Promise<T> {
    return this.ctx.net.call(this.ctx.process, `lease.${label}`, effect, options?.abortSignal);
  }

  async ensureExists(options: Abortable = {}): Promise<void> {
    const { account } = this.ctx;
    try {
      await this.call(
        "createContainer",
        () => {
          account.createContainer(this.containerName);
        },
        options,
      ).catch((error: unknown) => {
        if (status(error) !== 409) throw error;
      });
      await this.call(
        "createBlob",
        () => account.putBlob(this.containerName, this.blobName, "", { ifNoneMatch: "*", by: this.ctx.process.name }),
        options,
      );
    } catch (error) {
      const s = status(error);
      if (s === 409 || s === 412) return;
      throw libraryError(error, `Creating lease blob ${this.name}`, options.abortSignal);
    }
  }

  async acquire(leaseId: string, durationS: number, options: Abortable = {}): Promise<AcquireResult> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.call(
          "acquire",
          () => {
            this.ctx.account.acquireLease(this.containerName, this.blobName, leaseId, durationS);
          },
          options,
        );
        return { acquired: true };
      } catch (error) {
        const c = code(error);
        if (status(error) === 409 && (c === "LeaseAlreadyPresent" || c === "LeaseIsBreakingAndCannotBeAcquired"))
          return { acquired: false };
        if (status(error) === 404 && attempt === 1) {
          await this.ensureExists(options);
          continue;
        }
        throw libraryError(error, `Acquiring lease ${this.name}`, options.abortSignal);
      }
    }
  }

  async renew(leaseId: string, options: Abortable = {}): Promise<void> {
    try {
      await this.call(
        "renew",
        () => {
          this.ctx.account.renewLease(this.containerName, this.blobName, leaseId);
        },
        options,
      );
    } catch (error) {
      throw this.lostOr(error, `Renewing lease ${this.name}`, options.abortSignal);
    }
  }

  async release(leaseId: string, options: Abortable = {}): Promise<void> {
    try {
      await this.call(
        "release",
        () => {
          this.ctx.account.releaseLease(this.containerName, this.blobName, leaseId);
        },
        options,
      );
    } catch (error) {
      const s = status(error);
      if (s === 409 || s === 404) return;
      throw libraryError(error, `Releasing lease ${this.name}`, options.abortSignal);
    }
  }

  async breakLease(breakPeriodS: number, options: Abortable = {}): Promise<void> {
    try {
      await this.call(
        "break",
        () => {
          this.ctx.account.breakLease(this.containerName, this.blobName, breakPeriodS);
        },
        options,
      );
    } catch (error) {
      const s = status(error);
      if (s === 409 || s === 404) return;
      throw libraryError(error, `Breaking lease ${this.name}`, options.abortSignal);
    }
  }

  async breakIfUnchanged(version: string, record: LeaderRecord, options: Abortable = {}): Promise<BreakOutcome> {
    const { account } = this.ctx;
    try {
      await this.call(
        "breakIfUnchanged",
        () => {
          account.breakLease(this.containerName, this.blobName, 0, version);
        },
        options,
      );
    } catch (error) {
      const s = status(error);
      if (s === 412 || s === 404) return "changed";
      // 409: nobody holds the lease (its holder released it since the read), as BlobLeaseStore answers it.
      if (s === 409) return "not-held";
      throw libraryError(error, `Breaking lease ${this.name}`, options.abortSignal);
    }
    await this.call(
      "markBroken",
      () => {
        account.setMetadata(this.containerName, this.blobName, recordMetadata(record), { ifMatch: version });
      },
      options,
    ).catch(() => undefined);
    return "broken";
  }

  async read(options: Abortable = {}): Promise<LeaseSnapshot> {
    try {
      const blob = await this.call("read", () => this.ctx.account.getBlob(this.containerName, this.blobName), options);
      return { state: blob.leaseState, record: parseRecord(blob.metadata), version: blob.etag };
    } catch (error) {
      if (status(error) === 404) return { state: "available", record: EMPTY_RECORD };
      throw libraryError(error, `Reading lease ${this.name}`, options.abortSignal);
    }
  }

  async writeRecord(leaseId: string, record: LeaderRecord, options: Abortable = {}): Promise<void> {
    const metadata = recordMetadata(record);
    try {
      await this.call(
        `writeRecord e${record.epoch}`,
        () => {
          this.ctx.account.setMetadata(this.containerName, this.blobName, metadata, { leaseId });
        },
        options,
      );
    } catch (error) {
      throw this.lostOr(error, `Writing leader record to ${this.name}`, options.abortSignal, record.epoch);
    }
  }

  async readRevocation(options: Abortable = {}): Promise<Revocation | undefined> {
    try {
      const blob = await this.call(
        "readRevocation",
        () => this.ctx.account.getBlob(this.containerName, this.revocationBlob),
        options,
      );
      return parseRevocation(blob.metadata);
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw libraryError(error, `Reading revocation of ${this.name}`, options.abortSignal);
    }
  }

  async revoke(epoch: number, options: Abortable = {}): Promise<void> {
    const metadata = { [META.revokedEpoch]: String(epoch), [META.requestId]: randomUUID() };
    const upload = (): Promise<unknown> =>
      this.call(
        `revoke e${epoch}`,
        () =>
          this.ctx.account.putBlob(this.containerName, this.revocationBlob, "", {
            metadata,
            by: this.ctx.process.name,
          }),
        options,
      );
    try {
      await upload().catch(async (error: unknown) => {
        if (status(error) !== 404) throw error;
        await this.ensureExists(options);
        await upload();
      });
    } catch (error) {
      throw libraryError(error, `Requesting step-down on ${this.name}`, options.abortSignal);
    }
  }

  async honourRevocation(epoch: number, options: HonourOptions = {}): Promise<void> {
    const { requestId } = options;
    try {
      const blob = await this.call(
        "readRevocation",
        () => this.ctx.account.getBlob(this.containerName, this.revocationBlob),
        options,
      );
      const stored = parseRevocation(blob.metadata);
      if (stored?.epoch !== epoch || (requestId !== undefined && stored.requestId !== requestId)) return;
      const metadata = { ...blob.metadata, [META.revokedEpoch]: String(epoch), [META.honoured]: "true" };
      await this.call(
        "honourRevocation",
        () => {
          this.ctx.account.setMetadata(this.containerName, this.revocationBlob, metadata, { ifMatch: blob.etag });
        },
        options,
      );
    } catch (error) {
      const s = status(error);
      if (s === 404 || s === 412) return;
      throw libraryError(
        error,
        `Marking the step-down of epoch ${epoch} honoured on ${this.name}`,
        options.abortSignal,
      );
    }
  }

  private lostOr(error: unknown, operation: string, signal: AbortSignal | undefined, epoch = 0): Error {
    const s = status(error);
    if (!signal?.aborted && (s === 409 || s === 412 || s === 404)) {
      return new LeadershipLostError(
        "lost",
        epoch,
        `${operation}: storage says the lease is no longer ours (${s} ${code(error) ?? ""}).`,
        { cause: error },
      );
    }
    return libraryError(error, operation, signal);
  }
}

function parseRevocation(metadata: Record<string, string>): Revocation | undefined {
  const epoch = count(metadata[META.revokedEpoch]);
  if (epoch === undefined) return undefined;
  const requestId = metadata[META.requestId];
  return { epoch, honoured: metadata[META.honoured] === "true", ...(requestId === undefined ? {} : { requestId }) };
}

/** Creates a container when a request finds it missing (OnDemandCreation + createIfNotExists). */
async function createIfMissing(ctx: PortContext, container: string, signal: AbortSignal | undefined): Promise<void> {
  await ctx.net
    .call(
      ctx.process,
      `createContainer ${container}`,
      () => {
        ctx.account.createContainer(container);
      },
      signal,
    )
    .catch((error: unknown) => {
      if (status(error) !== 409) throw error;
    });
}

/** The state port (BlobStateStore's semantics): one JSON blob per key, the writer's epoch in its metadata. */
export class SimStateStore implements StateStore {
  constructor(
    private readonly ctx: PortContext,
    private readonly container = "coordinator-state",
  ) {}

  async read(key: string, options: Abortable = {}): Promise<StoredState | undefined> {
    try {
      const blob = await this.ctx.net.call(
        this.ctx.process,
        `state.read ${key}`,
        () => this.ctx.account.getBlob(this.container, key),
        options.abortSignal,
      );
      return { value: JSON.parse(blob.text) as unknown, etag: blob.etag, epoch: Number(blob.metadata.epoch ?? 0) };
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw libraryError(error, `Reading state ${key}`, options.abortSignal);
    }
  }

  async readSummary(key: string, options: Abortable = {}): Promise<StoredSummary | undefined> {
    try {
      const blob = await this.ctx.net.call(
        this.ctx.process,
        `state.readSummary ${key}`,
        () => this.ctx.account.getBlob(this.container, key),
        options.abortSignal,
      );
      const encoded = blob.metadata.summary;
      return {
        summary: encoded === undefined ? undefined : Buffer.from(encoded, "base64").toString("utf8"),
        etag: blob.etag,
        epoch: Number(blob.metadata.epoch ?? 0),
        bytes: Buffer.byteLength(blob.text),
      };
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw libraryError(error, `Reading the summary of state ${key}`, options.abortSignal);
    }
  }

  async delete(key: string, condition: { ifMatch: string }, options: Abortable = {}): Promise<void> {
    try {
      await this.ctx.net.call(
        this.ctx.process,
        `state.delete ${key}`,
        () => {
          this.ctx.account.deleteBlob(this.container, key, this.ctx.process.name, condition);
        },
        options.abortSignal,
      );
    } catch (error) {
      if (status(error) === 404) return;
      if (status(error) === 412)
        throw new ConcurrentUpdateError(`State ${key} changed since it was read; it was not deleted.`, {
          cause: error,
        });
      throw libraryError(error, `Deleting state ${key}`, options.abortSignal);
    }
  }

  async write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options: WriteOptions = {},
  ): Promise<{ etag: string }> {
    const body = JSON.stringify(value);
    const metadata: Record<string, string> = { epoch: String(epoch) };
    if (options.summary !== undefined) metadata.summary = Buffer.from(options.summary, "utf8").toString("base64");
    const upload = (): Promise<{ etag: string }> =>
      this.ctx.net.call(
        this.ctx.process,
        `state.write ${key} e${epoch}`,
        () =>
          this.ctx.account.putBlob(this.container, key, body, {
            metadata,
            ...condition,
            by: this.ctx.process.name,
            epoch,
          }),
        options.abortSignal,
      );
    try {
      return await upload().catch(async (error: unknown) => {
        if (code(error) !== "ContainerNotFound") throw error;
        await createIfMissing(this.ctx, this.container, options.abortSignal);
        return upload();
      });
    } catch (error) {
      const s = status(error);
      if (s === 412 || (s === 409 && code(error) === "BlobAlreadyExists")) {
        throw new ConcurrentUpdateError(
          `State ${key} changed since it was read (${s} ${code(error) ?? ""}); read it again and retry.`,
          { cause: error },
        );
      }
      throw libraryError(error, `Writing state ${key}`, options.abortSignal);
    }
  }
}

/** The files port (BlobFilesStore's semantics) on one container. */
export class SimFiles implements BlobFiles {
  constructor(
    private readonly ctx: PortContext,
    readonly container: string,
  ) {}

  private call<T>(label: string, effect: () => T, options: Abortable): Promise<T> {
    return this.ctx.net.call(this.ctx.process, `${this.container}.${label}`, effect, options.abortSignal);
  }

  async readText(name: string, options: Abortable = {}): Promise<string | undefined> {
    try {
      return (await this.call(`read ${name}`, () => this.ctx.account.getBlob(this.container, name), options)).text;
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw libraryError(error, `Reading blob ${name}`, options.abortSignal);
    }
  }

  async open(name: string, options: Abortable = {}): Promise<OpenedBlob | undefined> {
    let blob: { text: string; etag: string };
    try {
      blob = await this.call(`read ${name}`, () => this.ctx.account.getBlob(this.container, name), options);
    } catch (error) {
      if (status(error) === 404) return undefined;
      throw libraryError(error, `Reading blob ${name}`, options.abortSignal);
    }
    const bytes = Buffer.from(blob.text, "utf8");
    async function* content(): AsyncGenerator<Uint8Array> {
      await Promise.resolve();
      yield bytes;
    }
    return { sizeBytes: bytes.length, etag: blob.etag, content: content(), close: () => undefined };
  }

  async writeText(name: string, text: string, options: Abortable = {}): Promise<void> {
    try {
      await this.upload(`write ${name}`, name, text, {}, options);
    } catch (error) {
      throw libraryError(error, `Writing blob ${name}`, options.abortSignal);
    }
  }

  async createText(name: string, text: string, options: Abortable = {}): Promise<boolean> {
    try {
      await this.upload(`create ${name}`, name, text, { ifNoneMatch: "*" }, options);
      return true;
    } catch (error) {
      if (status(error) === 409 && code(error) === "BlobAlreadyExists") return false;
      throw libraryError(error, `Creating blob ${name}`, options.abortSignal);
    }
  }

  /** A Put Blob, creating the container if it is missing (as BlobFilesStore's `OnDemandCreation`). */
  private async upload(
    label: string,
    name: string,
    text: string,
    conditions: { ifNoneMatch?: "*" },
    options: Abortable,
  ): Promise<void> {
    const put = (): Promise<unknown> =>
      this.call(
        label,
        () => this.ctx.account.putBlob(this.container, name, text, { by: this.ctx.process.name, ...conditions }),
        options,
      );
    await put().catch(async (error: unknown) => {
      if (code(error) !== "ContainerNotFound") throw error;
      await createIfMissing(this.ctx, this.container, options.abortSignal);
      return put();
    });
  }

  async list(prefix: string, max: number, options: Abortable = {}): Promise<string[]> {
    try {
      return await this.call(`list ${prefix}`, () => this.ctx.account.listBlobs(this.container, prefix, max), options);
    } catch (error) {
      if (code(error) === "ContainerNotFound") return [];
      throw libraryError(error, `Listing blobs under ${prefix}`, options.abortSignal);
    }
  }

  async delete(name: string, options: Abortable = {}): Promise<void> {
    try {
      await this.call(
        `delete ${name}`,
        () => {
          this.ctx.account.deleteBlob(this.container, name, this.ctx.process.name);
        },
        options,
      );
    } catch (error) {
      if (status(error) === 404) return; // deleteIfExists
      throw libraryError(error, `Deleting blob ${name}`, options.abortSignal);
    }
  }
}

/** 404, or 400 PopReceiptMismatch: the message is not ours to change any more (as StorageQueue's isNoLongerOurs). */
function noLongerOurs(error: unknown): boolean {
  return status(error) === 404 || (status(error) === 400 && code(error) === "PopReceiptMismatch");
}

/** The queue port (StorageQueue's semantics), base64 bodies as the Functions host expects. */
export class SimMessageQueue implements MessageQueue {
  constructor(
    private readonly ctx: PortContext,
    readonly name: string,
  ) {}

  private call<T>(label: string, effect: () => T, options: Abortable): Promise<T> {
    return this.ctx.net.call(this.ctx.process, `${this.name}.${label}`, effect, options.abortSignal);
  }

  async send(texts: readonly string[], options: SendOptions = {}): Promise<void> {
    try {
      await Promise.all(
        texts.map((text) =>
          this.call(
            "send",
            () => {
              const by = this.ctx.process.name;
              const landed = this.ctx.account.onSend?.(this.name, text, by) ?? text;
              this.ctx.account.queue(this.name).send(encodeBody(landed, "base64"), options.visibilityDelayS ?? 0);
              if (this.name === "work-items") this.ctx.account.workSends.push({ text, by, atMs: Date.now() });
            },
            options,
          ),
        ),
      );
    } catch (error) {
      throw libraryError(error, `Sending to queue ${this.name}`, options.abortSignal);
    }
  }

  async sendHidden(text: string, visibilityDelayS: number, options: Abortable = {}): Promise<MessageReceipt> {
    try {
      return await this.call(
        "send",
        () => this.ctx.account.queue(this.name).sendHidden(encodeBody(text, "base64"), visibilityDelayS),
        options,
      );
    } catch (error) {
      throw libraryError(error, `Sending to queue ${this.name}`, options.abortSignal);
    }
  }

  async hide(
    message: MessageReceipt,
    visibilityTimeoutS: number,
    options: Abortable & { text?: string } = {},
  ): Promise<MessageReceipt | undefined> {
    const body = options.text === undefined ? undefined : encodeBody(options.text, "base64");
    try {
      const popReceipt = await this.call(
        `hide ${message.id}`,
        () => this.ctx.account.queue(this.name).update(message.id, message.popReceipt, visibilityTimeoutS, body),
        options,
      );
      return { id: message.id, popReceipt };
    } catch (error) {
      if (noLongerOurs(error)) return undefined;
      throw libraryError(error, `Hiding a message of queue ${this.name}`, options.abortSignal);
    }
  }

  async receive(max: number, visibilityTimeoutS: number, options: Abortable = {}): Promise<ReceivedMessage[]> {
    try {
      const items = await this.call(
        `receive ${max}`,
        () => this.ctx.account.queue(this.name).receive(Math.min(32, Math.max(1, max)), visibilityTimeoutS),
        options,
      );
      return items.map((item) => ({
        id: item.id,
        popReceipt: item.popReceipt,
        dequeueCount: item.dequeueCount,
        queuedMs: item.queuedMs,
        text: decodeBody(item.body, "base64"),
        rawText: item.body,
      }));
    } catch (error) {
      throw libraryError(error, `Receiving from queue ${this.name}`, options.abortSignal);
    }
  }

  async peek(max: number, options: Abortable = {}): Promise<PeekedMessage[]> {
    try {
      const items = await this.call(
        `peek ${max}`,
        () => this.ctx.account.queue(this.name).peek(Math.min(32, Math.max(1, max))),
        options,
      );
      return items.map((item) => ({
        id: item.id,
        dequeueCount: item.dequeueCount,
        text: decodeBody(item.body, "base64"),
        rawText: item.body,
      }));
    } catch (error) {
      throw libraryError(error, `Peeking at queue ${this.name}`, options.abortSignal);
    }
  }

  async release(message: Pick<ReceivedMessage, "id" | "popReceipt">, options: Abortable = {}): Promise<boolean> {
    try {
      await this.call(
        `release ${message.id}`,
        () => this.ctx.account.queue(this.name).update(message.id, message.popReceipt, 0),
        options,
      );
      return true;
    } catch (error) {
      if (noLongerOurs(error)) return false;
      throw libraryError(error, `Releasing a message of queue ${this.name}`, options.abortSignal);
    }
  }

  async delete(message: Pick<ReceivedMessage, "id" | "popReceipt">, options: Abortable = {}): Promise<boolean> {
    try {
      await this.call(
        `delete ${message.id}`,
        () => {
          this.ctx.account.queue(this.name).delete(message.id, message.popReceipt);
        },
        options,
      );
      return true;
    } catch (error) {
      if (noLongerOurs(error)) return false;
      throw libraryError(error, `Deleting a message from queue ${this.name}`, options.abortSignal);
    }
  }

  async approximateCount(options: Abortable = {}): Promise<number> {
    try {
      return await this.call("count", () => this.ctx.account.queue(this.name).messages.length, options);
    } catch (error) {
      throw libraryError(error, `Reading the message count of queue ${this.name}`, options.abortSignal);
    }
  }

  /** The host's Update Message (not part of the app's port): a new visibility timeout. */
  update(message: Pick<ReceivedMessage, "id" | "popReceipt">, visibilityTimeoutS: number): Promise<string> {
    return this.call(
      `update ${message.id}`,
      () => this.ctx.account.queue(this.name).update(message.id, message.popReceipt, visibilityTimeoutS),
      {},
    );
  }

  /** The host's move to `<queue>-poison`: the raw body, unchanged. */
  sendRaw(rawText: string): Promise<void> {
    return this.call(
      "send",
      () => {
        this.ctx.account.queue(this.name).send(rawText);
      },
      {},
    );
  }
}
