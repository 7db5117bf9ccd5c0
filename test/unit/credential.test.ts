import type { AccessToken, TokenCredential } from "@azure/identity";
import { describe, expect, it } from "vitest";
import { createCoordinatorClient } from "../../src/app/createClient";
import { connectionFromSettings, storageClientsFromSettings } from "../../src/azure/clients";
import { groupByKind } from "../../src/groupBy/groupBy";
import { ConfigurationError } from "../../src/library/errors";

/**
 * A `credential` option (a `TokenCredential`, as the Azure SDK clients take one) beside the app settings (issue 33):
 * given, the storage clients authenticate with it instead of the `DefaultAzureCredential` the identity-based settings
 * would build; anything else is refused up front, saying what is allowed.
 */

/** A credential that records the scopes it is asked for and refuses, so no request leaves the process. */
class RecordingCredential implements TokenCredential {
  readonly scopes: string[] = [];
  getToken(scopes: string | string[]): Promise<AccessToken | null> {
    this.scopes.push(...(Array.isArray(scopes) ? scopes : [scopes]));
    return Promise.reject(new Error("recorded: no token here"));
  }
}

const IDENTITY_SETTINGS = {
  X__blobServiceUri: "https://127.0.0.1:9/account",
  X__queueServiceUri: "https://127.0.0.1:9/account",
  X__clientId: "00000000-0000-0000-0000-000000000000",
};

describe("the credential option", () => {
  it("with the identity-based settings, the given credential is the one the clients use, not DefaultAzureCredential", async () => {
    const credential = new RecordingCredential();
    const connection = connectionFromSettings("X", IDENTITY_SETTINGS, { credential });
    expect(connection).toMatchObject({ kind: "identity", credential });
    const { blob, queue } = storageClientsFromSettings("X", IDENTITY_SETTINGS, { credential });
    await expect(blob.getContainerClient("c").exists()).rejects.toThrow(/recorded: no token here/);
    await expect(queue.getQueueClient("q").exists()).rejects.toThrow(/recorded: no token here/);
    expect(credential.scopes.length).toBeGreaterThanOrEqual(2);
    expect(new Set(credential.scopes)).toEqual(new Set(["https://storage.azure.com/.default"]));
  });

  it("a coordinator client's storage requests use it too", async () => {
    const credential = new RecordingCredential();
    const client = createCoordinatorClient({
      taskKinds: [groupByKind],
      connection: "X",
      env: IDENTITY_SETTINGS,
      credential,
    });
    await expect(client.getJob("some-job")).rejects.toThrow();
    expect(new Set(credential.scopes)).toEqual(new Set(["https://storage.azure.com/.default"]));
  });

  it("something that is not a TokenCredential is refused at once, saying what is allowed", () => {
    const bad = { token: "abc" } as unknown as TokenCredential;
    const message = /credential must be a TokenCredential \(an object with a getToken method/;
    expect(() => storageClientsFromSettings("X", IDENTITY_SETTINGS, { credential: bad })).toThrow(ConfigurationError);
    expect(() => storageClientsFromSettings("X", IDENTITY_SETTINGS, { credential: bad })).toThrow(message);
    expect(() => createCoordinatorClient({ taskKinds: [groupByKind], credential: bad })).toThrow(message);
  });
});
