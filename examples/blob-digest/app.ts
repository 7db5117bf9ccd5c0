/**
 * A Function app with the blob-digest kind beside the built-in group-by: what a user's `src/index.ts` looks like. Set
 * package.json `main` to its compiled file; on the local host, `LOCAL_APP_ENTRY=examples/blob-digest/app.ts`.
 */
import { app } from "@azure/functions";
import { groupByKind, registerCoordinator, storageClientsFromSettings } from "azure-leader-coordinator";
import { blobDigestKind } from "./digestKind";

let clients: ReturnType<typeof storageClientsFromSettings> | undefined;

export const coordinator = registerCoordinator(app, {
  taskKinds: [groupByKind, blobDigestKind(() => (clients ??= storageClientsFromSettings()).blob)],
});
