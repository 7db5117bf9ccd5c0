/**
 * The Function app of the flow-limits chaos scenario (issue 42): this repository's app (`functions/index.ts`) with the
 * recording, limited kind beside group-by, registered through the package's API as a user's app does.
 */
import { app } from "@azure/functions";
import { groupByKind, registerCoordinator } from "../../../../src/index";
import { limitedRecordingKind } from "./limitsKind";

export const coordinator = registerCoordinator(app, { taskKinds: [groupByKind, limitedRecordingKind] });
