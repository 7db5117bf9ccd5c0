/**
 * HTML escaping, in one place. Pages are built with the {@link html} tag: every interpolated value is escaped unless
 * it is itself built by `html` (a {@link SafeHtml}), so markup cannot come from data by accident. Interpolate values
 * only between tags or inside double-quoted attribute values.
 */

/** Markup that is safe to insert as is: built by {@link html}, so every value in it was escaped. */
export class SafeHtml {
  /** Use {@link html}; the constructor is for this module. */
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** What may be interpolated: text and numbers (escaped), safe markup (as is), lists of either (joined), or nothing. */
export type HtmlValue = SafeHtml | string | number | false | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for use between tags or in a quoted attribute value: `& < > " '`. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join("");
  if (value === undefined || value === null || value === false) return "";
  return escapeHtml(String(value));
}

/** Template tag: the literal parts are markup, every `${value}` is escaped (see {@link HtmlValue}). */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0] ?? "";
  values.forEach((value, index) => {
    out += render(value) + (strings[index + 1] ?? "");
  });
  return new SafeHtml(out);
}
