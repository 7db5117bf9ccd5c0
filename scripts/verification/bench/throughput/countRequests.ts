import { countProcessRequests } from "./requestCounter";

/**
 * Preloaded into a benchmark's instance process (`node --import`, through its `languageWorkers__node__arguments`, see
 * `projectRun.ts`): counts every storage request of the process into `LOCAL_REQUEST_COUNTS_FILE`, from before the
 * app builds its first client.
 */
const countsFile = process.env.LOCAL_REQUEST_COUNTS_FILE;
if (countsFile !== undefined && countsFile !== "")
  countProcessRequests(countsFile, "app", process.env.COORDINATION_STORAGE ?? "");
