import type { InvocationContext } from "@azure/functions";

/** A queue message's id and delivery count, from the trigger metadata the host passes (strings or numbers). */
export function deliveryOf(context: InvocationContext): { id: string; dequeueCount: number } {
  const metadata = context.triggerMetadata ?? {};
  const dequeueCount = typeof metadata.dequeueCount === "number" ? metadata.dequeueCount : Number(metadata.dequeueCount ?? 1);
  const id = typeof metadata.id === "string" ? metadata.id : context.invocationId;
  return { id, dequeueCount: Number.isFinite(dequeueCount) ? dequeueCount : 1 };
}
