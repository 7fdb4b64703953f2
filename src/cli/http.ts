import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { Readable } from "node:stream";

/** A web-standard handler: the shape `createMcpHandler` of `@modelcontextprotocol/server` gives. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * Serves `handle` at `path` over HTTP on `host`:`port` (0: any free port) with Node's own server: each request
 * becomes a web `Request` (its body streamed, aborted when the client goes), each `Response` is streamed back as it
 * comes (an SSE stream stays open). Anything but `path` is 404. Resolves once listening, with the URL and a close.
 */
export async function listenHttp(handle: FetchHandler, { host, port, path }: { host: string; port: number; path: string }): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((incoming, outgoing) => void respond(handle, path, incoming, outgoing));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === "object" && address !== null ? address.port : port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost}:${bound}${path}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function respond(handle: FetchHandler, path: string, incoming: IncomingMessage, outgoing: ServerResponse): Promise<void> {
  const aborted = new AbortController();
  outgoing.once("close", () => aborted.abort());
  try {
    // The path alone decides; the Host header is the handler's to check (the URL is built without it).
    const url = new URL(incoming.url ?? "/", "http://localhost");
    if (url.pathname !== path) {
      outgoing.writeHead(404, { "content-type": "text/plain" }).end(`Not found: the MCP endpoint is ${path}\n`);
      return;
    }
    const headers = new Headers();
    for (let index = 0; index + 1 < incoming.rawHeaders.length; index += 2) headers.append(incoming.rawHeaders[index]!, incoming.rawHeaders[index + 1]!);
    const hasBody = incoming.method !== "GET" && incoming.method !== "HEAD";
    const request = new Request(url, {
      method: incoming.method ?? "GET",
      headers,
      signal: aborted.signal,
      ...(hasBody ? { body: Readable.toWeb(incoming) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
    } as RequestInit);
    const response = await handle(request);
    outgoing.writeHead(response.status, [...response.headers].flat());
    if (response.body) for await (const chunk of response.body) outgoing.write(chunk);
    outgoing.end();
  } catch {
    // A request that could not be read (a bad URL, a client gone mid-body), or a stream that broke: no stack trace.
    if (!outgoing.headersSent) outgoing.writeHead(400, { "content-type": "text/plain" }).end("Bad request\n");
    else outgoing.destroy();
  }
}
