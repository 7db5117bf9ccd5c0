import type { Side } from "./hostProcess";
import type { Row } from "./rows";
import type { World } from "./world";

/** A scenario of `conformance:host`: it runs on both sides (at once, on separate queues and host ids), gives rows. */
export interface Scenario {
  name: string;
  /** Part of the short run (`--quick`, CI). */
  quick: boolean;
  /** Long and mostly waiting: started first and awaited last, beside the others. */
  background?: boolean;
  run(world: World, options: ScenarioOptions): Promise<Row[]>;
}

export interface ScenarioOptions {
  quick: boolean;
  log: (line: string) => void;
}

/** Runs `measure` for both sides at once. */
export async function onBothSides<T>(measure: (side: Side) => Promise<T>): Promise<Record<Side, T>> {
  const [sdk, local] = await Promise.all([measure("sdk"), measure("local")]);
  return { sdk, local };
}

/** Base64 of UTF-8 text, as the queues extension expects a message body by default. */
export function base64(text: string): string {
  return Buffer.from(text, "utf8").toString("base64");
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
