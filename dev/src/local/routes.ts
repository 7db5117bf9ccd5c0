/**
 * HTTP route templates as the host matches them: `<routePrefix>/<route>` (route defaults to the function name),
 * case-insensitive, `{name}` placeholders, optional `{name?}`, catch-all `{*name}`, and the `int`, `bool`, `guid`,
 * `alpha` constraints; other constraints are accepted but not checked (docs/LOCAL-HOST.md, "Known gaps").
 */

/** A compiled route. */
export interface Route {
  readonly template: string;
  /** Route parameters when `path` (without query) matches, else undefined. */
  match(path: string): Record<string, string> | undefined;
}

const CONSTRAINTS: Record<string, string> = {
  int: "-?\\d+",
  long: "-?\\d+",
  bool: "true|false",
  guid: "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
  alpha: "[A-Za-z]+",
};

const PLACEHOLDER = /^\{(\*)?([A-Za-z_]\w*)(?::([^}?]+))?(\?)?\}$/;

/**
 * Compiles `prefix/route`.
 *
 * @throws Error naming the function when the template has a malformed placeholder.
 */
export function compileRoute(prefix: string, route: string, functionName: string): Route {
  const template = [prefix, route.replace(/^\/+|\/+$/g, "")].filter((part) => part !== "").join("/");
  const names: string[] = [];
  let pattern = "";
  for (const segment of template.split("/").filter((part) => part !== "")) {
    const placeholder = PLACEHOLDER.exec(segment);
    if (placeholder !== null) {
      const [, catchAll, name = "", constraint, optional] = placeholder;
      names.push(name);
      const body =
        catchAll === undefined ? `(${CONSTRAINTS[(constraint ?? "").split(":")[0] ?? ""] ?? "[^/]+"})` : "(.*)";
      pattern += catchAll !== undefined || optional !== undefined ? `(?:/${body})?` : `/${body}`;
      continue;
    }
    if (/[{}]/.test(segment.replace(/\{[A-Za-z_]\w*\}/g, "")))
      throw new Error(`Function "${functionName}": route "${route}" has a malformed placeholder in "${segment}".`);
    // A segment mixing text and placeholders, e.g. "report.{format}".
    const parts = segment.split(/(\{[A-Za-z_]\w*\})/).filter((part) => part !== "");
    pattern +=
      "/" +
      parts
        .map((part) => (part.startsWith("{") ? (names.push(part.slice(1, -1)), "([^/]+?)") : escapeRegExp(part)))
        .join("");
  }
  const regex = new RegExp(`^${pattern}/?$`, "i");
  return {
    template,
    match(path) {
      const found = regex.exec(path.replace(/\/+$/, "") || "/");
      if (found === null) return undefined;
      const params: Record<string, string> = {};
      names.forEach((name, index) => {
        const value = found[index + 1];
        if (value !== undefined && value !== "") params[name] = decodeURIComponent(value);
      });
      return params;
    },
  };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
