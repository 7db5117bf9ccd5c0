/**
 * The settings reference against the code (issue 45): every setting a table of the reference documents is one the
 * code reads, and every setting the code reads is documented — with the default the schema gives it and, for a number,
 * the range the schema allows. A table is checked when its header's first cell is `Setting`; its first cell names the
 * setting (the first `code span`), a `Default` column the default (its first code span), an `Allowed` column the range.
 */

/** A setting the code reads. */
export interface KnownSetting {
  name: string;
  /** The schema's default, as text; undefined when there is none (a connection, a telemetry setting). */
  default?: string;
  /** For a whole number: the smallest and largest value the schema allows. */
  min?: number;
  max?: number;
}

/** A row of a settings table. */
interface DocumentedSetting {
  name: string;
  line: number;
  default: string | undefined;
  allowed: string | undefined;
}

function cells(row: string): string[] {
  return row
    .trim()
    .replace(/^\|/, "")
    .replace(/\|$/, "")
    .split(/(?<!\\)\|/)
    .map((cell) => cell.trim());
}

const firstCode = (cell: string | undefined): string | undefined => /`([^`]+)`/.exec(cell ?? "")?.[1];

/** The rows of the file's settings tables. */
export function documentedSettings(text: string): DocumentedSetting[] {
  const rows: DocumentedSetting[] = [];
  const lines = text.split("\n");
  let columns: string[] | undefined;
  lines.forEach((raw, index) => {
    if (!raw.trim().startsWith("|")) {
      columns = undefined;
      return;
    }
    const row = cells(raw);
    if (columns === undefined) {
      columns = row[0] === "Setting" ? row : [];
      return;
    }
    if (columns.length === 0 || row.every((cell) => /^:?-+:?$/.test(cell))) return;
    const name = firstCode(row[0]);
    if (name === undefined) return;
    const at = (title: string): string | undefined => {
      const column = columns?.indexOf(title) ?? -1;
      return column === -1 ? undefined : row[column];
    };
    rows.push({ name, line: index + 1, default: at("Default"), allowed: at("Allowed") });
  });
  return rows;
}

/** Whether `text` states `value` as a number (digits, no separators), not as part of a longer one. */
function states(text: string, value: number): boolean {
  return new RegExp(`(?<![\\d.])${value}(?![\\d.])`).test(text);
}

/** Each difference between the reference (`file`'s `text`) and the settings the code reads. */
export function checkSettingsReference(file: string, text: string, known: readonly KnownSetting[]): string[] {
  const problems: string[] = [];
  const documented = documentedSettings(text);
  const byName = new Map(known.map((setting) => [setting.name, setting]));
  const seen = new Set<string>();
  for (const row of documented) {
    const setting = byName.get(row.name);
    if (seen.has(row.name)) problems.push(`${file}:${row.line}: ${row.name} is documented twice`);
    seen.add(row.name);
    if (setting === undefined) {
      problems.push(`${file}:${row.line}: ${row.name} is documented, but the code reads no such setting`);
      continue;
    }
    const stated = firstCode(row.default);
    if (setting.default !== undefined && stated !== setting.default)
      problems.push(
        `${file}:${row.line}: ${row.name}'s default is documented as ${stated === undefined ? "nothing" : `"${stated}"`}; the code's is "${setting.default}"`,
      );
    if (setting.min !== undefined && setting.max !== undefined) {
      const allowed = row.allowed ?? "";
      if (!states(allowed, setting.min) || !states(allowed, setting.max))
        problems.push(
          `${file}:${row.line}: ${row.name} allows ${setting.min} to ${setting.max}; its Allowed column does not state both`,
        );
    }
  }
  for (const setting of known)
    if (!seen.has(setting.name))
      problems.push(`${file}: the code reads ${setting.name}, which no settings table of the reference documents`);
  return problems;
}
