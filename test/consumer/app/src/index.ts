// A user's Function app: the coordinator with the user's own async task kind, registered in one call.
import { app } from "@azure/functions";
import { registerCoordinator, type AggregateOf, type JobStatus } from "azure-leader-coordinator";
import { LeaderElector, type LeadershipTerm } from "azure-leader-coordinator/leader-election";
import { wordCount } from "./wordCount";

export { wordCount };

export const coordinator = registerCoordinator(app, {
  taskKinds: [wordCount],
  functionNames: { coordinator: "wordsLeader" },
  http: { routePrefix: "words" },
});

// The types a user reaches for are exported, with the leader-election library beside them; a status read with the
// kind named is typed by its aggregate.
export type Checks = [JobStatus, LeadershipTerm, typeof LeaderElector];
export async function totalWords(id: string): Promise<number | undefined> {
  const status = await coordinator.client.getJob(id, { kind: wordCount });
  return status?.aggregate?.words;
}
