/**
 * `azure-leader-coordinator-dev`: the development tools of `azure-leader-coordinator`, for a user's own Function app —
 * a task kind tested alone ({@link runKind}), the app as a cluster on an embedded Azurite ({@link startTestCluster}),
 * and the bin `azure-leader-coordinator-dev` (`local`, `enqueue --app`, `package`). A dev dependency: nothing of it
 * ships to production. `./testing` is the same entry, under the path the runtime package used to export it from.
 *
 * @packageDocumentation
 */
export * from "./testing/index.js";
