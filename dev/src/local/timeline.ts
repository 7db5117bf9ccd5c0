import { fieldText, type EventRecord } from "./eventLog.js";

/**
 * Draws the leadership timeline of a run as a self-contained SVG: one lane per instance; each term a bar labelled
 * with its epoch, from `lease-acquired` to `lease-released`/`lease-lost` (or the instance's exit); completed steps as
 * grey ticks, aborted steps as red ticks with a dot, skipped ticks (not leader) as faint marks; an instance killed
 * with SIGKILL gets a red cross and a hatched lane from then on; faults injected by the chaos suite (`chaos-fault`) are
 * orange bands. A pure function of the records.
 */

/** Options of {@link renderTimeline}. */
export interface TimelineOptions {
  /** Heading. @default "Leadership timeline" */
  title?: string;
  /** Width of the picture in px. @default 1000 */
  widthPx?: number;
}

interface Term {
  instance: string;
  epoch: number | undefined;
  startMs: number;
  endMs: number;
  end: "released" | "lost" | "exited" | "running";
}

const LANE_PX = 44;
const LEFT_PX = 130;
const TOP_PX = 46;
const COLORS = ["#4e79a7", "#59a14f", "#9c755f", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#f28e2b"];

/** Renders the SVG for `records` (any order). */
export function renderTimeline(records: readonly EventRecord[], options: TimelineOptions = {}): string {
  const widthPx = options.widthPx ?? 1000;
  const events = records
    .map((record): EventRecord & { ms: number } => ({ ...record, ms: Date.parse(record.ts) }))
    .filter((record) => Number.isFinite(record.ms))
    .sort((a, b) => a.ms - b.ms);
  const lanes = [...new Set(events.map((event) => event.instance))].sort((a, b) =>
    a.localeCompare(b, undefined, { numeric: true }),
  );
  const t0 = events[0]?.ms ?? 0;
  const t1 = Math.max(t0 + 1000, events.at(-1)?.ms ?? 0);
  const x = (ms: number): number => LEFT_PX + ((ms - t0) / (t1 - t0)) * (widthPx - LEFT_PX - 20);
  const laneY = (instance: string): number => TOP_PX + lanes.indexOf(instance) * LANE_PX;
  const heightPx = TOP_PX + lanes.length * LANE_PX + 70;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${widthPx}" height="${heightPx}" viewBox="0 0 ${widthPx} ${heightPx}" font-family="sans-serif" font-size="12">`,
    `<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" stroke="#d62728" stroke-opacity="0.35" stroke-width="2"/></pattern></defs>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">${escapeXml(options.title ?? "Leadership timeline")}</text>`,
    `<text x="10" y="36" fill="#555">${escapeXml(`${new Date(t0).toISOString()} – ${new Date(t1).toISOString()} (${((t1 - t0) / 1000).toFixed(1)} s)`)}</text>`,
  ];
  for (const lane of lanes) {
    const y = laneY(lane);
    out.push(
      `<g class="lane" data-instance="${escapeXml(lane)}">`,
      `<text x="10" y="${y + 22}">${escapeXml(lane)}</text>`,
      `<line x1="${LEFT_PX}" y1="${y + 22}" x2="${widthPx - 20}" y2="${y + 22}" stroke="#ddd"/>`,
      `</g>`,
    );
  }
  const scale: Scale = { x, laneY, widthPx };
  out.push(...termMarks(terms(events, t1), scale), ...eventMarks(events, scale));
  out.push(...axis(t0, t1, x, TOP_PX + lanes.length * LANE_PX + 8, widthPx), ...legend(heightPx - 18), `</svg>`);
  return `${out.join("\n")}\n`;
}

/** Where things go on the timeline: `x` of a time (ms), the top `y` of an instance's lane, the width. */
interface Scale {
  x: (ms: number) => number;
  laneY: (instance: string) => number;
  widthPx: number;
}

/** Each leadership term, a bar on its instance's lane labelled with its epoch. */
function termMarks(all: readonly Term[], { x, laneY }: Scale): string[] {
  const out: string[] = [];
  for (const [index, term] of all.entries()) {
    const y = laneY(term.instance) + 10;
    const left = x(term.startMs);
    const width = Math.max(4, x(term.endMs) - left);
    const color = COLORS[(term.epoch ?? index) % COLORS.length] ?? "#4e79a7";
    const label = term.epoch === undefined ? "term" : `e${term.epoch}`;
    const detail = `${term.instance} ${label}: ${((term.endMs - term.startMs) / 1000).toFixed(1)} s, ${term.end}`;
    out.push(`<g class="term" data-epoch="${term.epoch ?? ""}"><title>${escapeXml(detail)}</title>`);
    out.push(
      `<rect x="${left.toFixed(1)}" y="${y}" width="${width.toFixed(1)}" height="24" rx="3" fill="${color}" fill-opacity="0.85"${term.end === "lost" ? ` stroke="#d62728" stroke-width="2"` : ""}/>`,
    );
    // A term of one step is a sliver at this scale: its label then goes above the bar.
    if (width > 26)
      out.push(
        `<text x="${(left + width / 2).toFixed(1)}" y="${y + 16}" text-anchor="middle" fill="#fff" font-weight="bold">${label}</text>`,
      );
    else
      out.push(
        `<text x="${(left + width / 2).toFixed(1)}" y="${y - 1}" text-anchor="middle" fill="#333" font-size="10">${label}</text>`,
      );
    out.push(`</g>`);
  }
  return out;
}

/** Steps, aborted steps, injected faults and killed instances, as marks on their lanes. */
function eventMarks(events: readonly (EventRecord & { ms: number })[], { x, laneY, widthPx }: Scale): string[] {
  const out: string[] = [];
  for (const event of events) {
    const y = laneY(event.instance);
    const at = x(event.ms).toFixed(1);
    if (event.type === "step-completed")
      out.push(
        `<line class="step" x1="${at}" y1="${y + 36}" x2="${at}" y2="${y + 42}" stroke="#444" stroke-width="1.5"/>`,
      );
    else if (event.type === "step-skipped")
      out.push(`<line class="step-skipped" x1="${at}" y1="${y + 37}" x2="${at}" y2="${y + 42}" stroke="#999"/>`);
    else if (event.type === "step-aborted") {
      const why = escapeXml(
        `step aborted (epoch ${event.epoch ?? "?"}): ${fieldText(event.reason)} ${fieldText(event.detail)}`.trim(),
      );
      out.push(
        `<g class="step-aborted"><title>${why}</title><line x1="${at}" y1="${y + 4}" x2="${at}" y2="${y + 42}" stroke="#d62728" stroke-width="2"/><circle cx="${at}" cy="${y + 6}" r="4" fill="#d62728"/></g>`,
      );
    } else if (event.type === "chaos-fault") {
      // An injected fault (the chaos suite): a band from when it began to when it ended, on its target's lane.
      const startMs = typeof event.startTs === "string" ? Date.parse(event.startTs) : event.ms;
      const left = x(Number.isFinite(startMs) ? startMs : event.ms);
      const what = escapeXml(
        `fault: ${fieldText(event.fault)} on ${event.instance} (${((event.ms - startMs) / 1000).toFixed(1)} s)`,
      );
      out.push(
        `<g class="fault"><title>${what}</title><rect x="${left.toFixed(1)}" y="${y + 2}" width="${Math.max(3, x(event.ms) - left).toFixed(1)}" height="40" fill="#ff7f0e" fill-opacity="0.25" stroke="#ff7f0e"/><text x="${(left + 2).toFixed(1)}" y="${y + 12}" fill="#b35806" font-size="10">${escapeXml(fieldText(event.fault))}</text></g>`,
      );
    } else if (event.type === "instance-exited" && event.signal === "SIGKILL") {
      const right = widthPx - 20;
      out.push(
        `<g class="killed"><title>${escapeXml(`${event.instance} killed (SIGKILL) at ${event.ts}`)}</title>`,
        `<rect x="${at}" y="${y + 8}" width="${Math.max(0, right - x(event.ms)).toFixed(1)}" height="28" fill="url(#hatch)"/>`,
        `<text x="${at}" y="${y + 28}" text-anchor="middle" fill="#d62728" font-size="20" font-weight="bold">✕</text>`,
        `<text x="${(x(event.ms) + 14).toFixed(1)}" y="${y + 8}" fill="#d62728">killed</text></g>`,
      );
    }
  }
  return out;
}

/** Pairs each lease-acquired with the end of that term on the same instance. */
function terms(events: readonly (EventRecord & { ms: number })[], endMs: number): Term[] {
  const open = new Map<string, Term>();
  const done: Term[] = [];
  const close = (instance: string, atMs: number, end: Term["end"]): void => {
    const term = open.get(instance);
    if (term === undefined) return;
    done.push({ ...term, endMs: atMs, end });
    open.delete(instance);
  };
  for (const event of events) {
    if (event.type === "lease-acquired") {
      close(event.instance, event.ms, "lost");
      open.set(event.instance, {
        instance: event.instance,
        epoch: event.epoch,
        startMs: event.ms,
        endMs: event.ms,
        end: "running",
      });
    } else if (event.type === "lease-released") close(event.instance, event.ms, "released");
    else if (event.type === "lease-lost") close(event.instance, event.ms, "lost");
    else if (event.type === "instance-exited") close(event.instance, event.ms, "exited");
  }
  for (const instance of [...open.keys()]) close(instance, endMs, "running");
  return done;
}

function axis(t0: number, t1: number, x: (ms: number) => number, y: number, widthPx: number): string[] {
  const spanS = (t1 - t0) / 1000;
  const stepS =
    [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600].find((candidate) => spanS / candidate <= 12) ?? 7200;
  const out = [`<line x1="${LEFT_PX}" y1="${y}" x2="${widthPx - 20}" y2="${y}" stroke="#888"/>`];
  for (let s = 0; s <= spanS; s += stepS) {
    const at = x(t0 + s * 1000).toFixed(1);
    out.push(
      `<line x1="${at}" y1="${y}" x2="${at}" y2="${y + 5}" stroke="#888"/>`,
      `<text x="${at}" y="${y + 18}" text-anchor="middle" fill="#555">+${s}s</text>`,
    );
  }
  return out;
}

function legend(y: number): string[] {
  return [
    `<g class="legend" fill="#333">`,
    `<rect x="10" y="${y - 10}" width="22" height="12" rx="2" fill="${COLORS[0] ?? "#4e79a7"}"/><text x="38" y="${y}">term (label: epoch; red edge: lease lost)</text>`,
    `<line x1="300" y1="${y - 10}" x2="300" y2="${y + 2}" stroke="#444" stroke-width="1.5"/><text x="308" y="${y}">step completed</text>`,
    `<line x1="420" y1="${y - 10}" x2="420" y2="${y + 2}" stroke="#999"/><text x="428" y="${y}">skipped (not leader)</text>`,
    `<circle cx="570" cy="${y - 6}" r="4" fill="#d62728"/><text x="580" y="${y}">step aborted</text>`,
    `<text x="690" y="${y + 2}" fill="#d62728" font-size="16" font-weight="bold">✕</text><text x="706" y="${y}">instance killed</text>`,
    `</g>`,
  ];
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
