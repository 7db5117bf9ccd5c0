/**
 * The size of a value's JSON, measured without building the JSON: a job document whose aggregate holds a few keys of
 * millions of characters is hundreds of MB of text, and `JSON.stringify` of it may throw (`Invalid string length`) or
 * take the process's memory before any check could run. The walk stops as soon as it passes `limit`.
 */

/** Characters JSON writes as themselves, one byte each in UTF-8: printable ASCII but `"` and `\`. */
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * Bytes of UTF-8 in `JSON.stringify(value)` — exactly, up to `limit`; once the count passes `limit` the walk stops and
 * a number above `limit` is returned (not the full size). What `JSON.stringify` leaves out (`undefined`, functions,
 * symbols as object values) is left out here too; `toJSON` is honoured. 0 for a value that has no JSON at all.
 */
export function jsonByteLength(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let total = 0;
  // Each call adds to `total` and answers false once it has passed `limit` (the caller then stops).
  const visit = (item: unknown, inArray: boolean): boolean => {
    const current =
      item !== null && typeof item === "object" && typeof (item as { toJSON?: unknown }).toJSON === "function"
        ? (item as { toJSON: () => unknown }).toJSON()
        : item;
    switch (typeof current) {
      case "string":
        total += stringBytes(current);
        break;
      case "number":
        total += Number.isFinite(current) ? String(current).length : 4;
        break;
      case "boolean":
        total += current ? 4 : 5;
        break;
      case "object":
        if (current === null) total += 4;
        else if (Array.isArray(current)) {
          total += 2 + Math.max(0, current.length - 1);
          for (const element of current as unknown[]) if (!visit(element, true)) return false;
        } else {
          total += 2;
          let first = true;
          for (const [key, member] of Object.entries(current)) {
            if (!hasJson(member)) continue;
            total += (first ? 0 : 1) + stringBytes(key) + 1;
            first = false;
            if (!visit(member, false)) return false;
          }
        }
        break;
      default:
        // undefined, a function or a symbol: `null` in an array, nothing at the top.
        if (inArray) total += 4;
    }
    return total <= limit;
  };
  visit(value, false);
  return total;
}

/** Whether an object member with this value is written (`JSON.stringify` drops the others). */
function hasJson(value: unknown): boolean {
  return value !== undefined && typeof value !== "function" && typeof value !== "symbol";
}

/** Bytes of a string as JSON: its quotes, escapes, and UTF-8 for the rest. */
function stringBytes(text: string): number {
  if (PLAIN_ASCII.test(text)) return text.length + 2;
  let bytes = 2;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x22 || code === 0x5c) bytes += 2;
    else if (code < 0x20)
      bytes += code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d ? 2 : 6;
    else if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4; // a surrogate pair: one code point of 4 bytes
        index++;
      } else bytes += 6; // a lone surrogate: JSON.stringify writes \udXXX
    } else if (code >= 0xdc00 && code <= 0xdfff) bytes += 6;
    else bytes += 3;
  }
  return bytes;
}
