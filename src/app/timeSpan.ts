/**
 * Parses a .NET TimeSpan as host.json writes it (`"hh:mm:ss"`, `"d.hh:mm:ss"`, optional `.fff`) into ms.
 * Returns undefined when `text` is not a TimeSpan, so callers can report the setting by name.
 */
export function parseTimeSpanMs(text: string): number | undefined {
  const match = /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/.exec(text.trim());
  if (match === null) return undefined;
  const [, days, hours, minutes, seconds, fraction] = match;
  const wholeMs = ((Number(days ?? 0) * 24 + Number(hours)) * 60 + Number(minutes)) * 60_000 + Number(seconds) * 1000;
  return wholeMs + (fraction === undefined ? 0 : Math.round(Number(`0.${fraction}`) * 1000));
}
