/**
 * The Function app of `bench:limits`' sustained measurement (issue 42): this repository's app with the bench's kind
 * beside group-by, registered through the package's API as a user's app does.
 */
import { app } from "@azure/functions";
import { groupByKind, registerCoordinator } from "../../../../src/index";
import { sustainedKind } from "./sustainedKind";

export const coordinator = registerCoordinator(app, { taskKinds: [groupByKind, sustainedKind] });
