/** Reads a whole response stream into a buffer (an empty one when there is no body). */
export async function streamToBuffer(stream: NodeJS.ReadableStream | undefined): Promise<Buffer> {
  if (stream === undefined) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks);
}
