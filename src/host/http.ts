import type { HttpRequest, HttpResponseInit } from "@azure/functions";

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Reads a JSON body, or returns the 4xx response that says what was wrong. */
export async function readJsonBody(
  request: HttpRequest,
): Promise<{ ok: true; body: unknown } | { ok: false; response: HttpResponseInit }> {
  const declared = Number(request.headers.get("content-length") ?? 0);
  if (declared > MAX_BODY_BYTES)
    return {
      ok: false,
      response: problem(
        413,
        `Request body is ${declared} bytes; at most ${MAX_BODY_BYTES} are allowed. Put large inputs in blobs and name them with { "blob": … }, or name the items in a manifest: { "manifest": "items.ndjson" } (an NDJSON blob in the input container).`,
      ),
    };
  const text = await request.text();
  if (Buffer.byteLength(text) > MAX_BODY_BYTES)
    return {
      ok: false,
      response: problem(
        413,
        `Request body is larger than ${MAX_BODY_BYTES} bytes; name the items in a manifest instead: { "manifest": "items.ndjson" } (an NDJSON blob in the input container).`,
      ),
    };
  try {
    return { ok: true, body: JSON.parse(text) };
  } catch {
    return {
      ok: false,
      response: problem(400, "Request body is not valid JSON.", [{ field: "(body)", message: "not valid JSON" }]),
    };
  }
}

/** A JSON error response. */
export function problem(
  status: number,
  message: string,
  errors?: { field: string; message: string }[],
): HttpResponseInit {
  return { status, jsonBody: { error: message, ...(errors ? { errors } : {}) } };
}
