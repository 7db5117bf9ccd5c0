import type { HttpRoute } from "./httpTrigger.js";

/**
 * Where a local instance serves the coordinator's routes, from the routes it announced (its ready line): the job
 * routes' base and the status page.
 */

/**
 * The base URL of the job routes among an instance's routes (`POST <prefix>/jobs`, `GET <prefix>/jobs/{id}`), on
 * `http://127.0.0.1:<port>`; undefined when it serves none (the app registered `http: false`).
 */
export function jobsBaseUrl(port: number, routes: readonly HttpRoute[]): string | undefined {
  const submit = routeEndingIn(routes, "jobs", "POST");
  return submit === undefined ? undefined : `http://127.0.0.1:${port}/${submit.template.slice(0, -"jobs".length)}`;
}

/** The status page's URL among an instance's routes (`GET <prefix>/status`); undefined when it serves none. */
export function statusPageUrl(port: number, routes: readonly HttpRoute[]): string | undefined {
  const page = routeEndingIn(routes, "status", "GET");
  return page === undefined ? undefined : `http://127.0.0.1:${port}/${page.template}`;
}

/** The route whose path ends in `last` and that takes `method` (or any method). */
export function routeEndingIn(routes: readonly HttpRoute[], last: string, method: string): HttpRoute | undefined {
  return routes.find(
    (route) =>
      (route.template === last || route.template.endsWith(`/${last}`)) &&
      (route.methods.length === 0 || route.methods.includes(method)),
  );
}
