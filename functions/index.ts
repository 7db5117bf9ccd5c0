/**
 * This repo's own Function app (package.json `main`): the coordinator with the built-in group-by kind, registered
 * through the package's public API exactly as a user's app does it. Names, queues, schedule and limits come from the
 * app settings (see docs/reference/settings.md).
 */
import { app } from "@azure/functions";
import { groupByKind, registerCoordinator } from "azure-leader-coordinator";

export const coordinator = registerCoordinator(app, { taskKinds: [groupByKind] });
