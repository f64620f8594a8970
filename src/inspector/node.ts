// The inspector on Node's request/response pair (node:http, Express, Fastify's raw pair, Koa's ctx.req/res).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basePaths, inBase, outside, type InspectorHandler } from './handler.js';
import { MAX_BODY } from './http.js';

/** A Node request as frameworks hand it: Express keeps the full path in `originalUrl` and may have parsed `body`. */
type NodeRequest = IncomingMessage & { originalUrl?: string; body?: unknown };

/** A Node-style handler: `(req, res, next?)`; requests outside the inspector go to `next` (or get a 404). */
export type NodeInspectorHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<void>;

/** Methods a `Request` may carry here (fetch refuses TRACE, CONNECT, TRACK; the inspector answers none of the rest). */
const ALLOWED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Whether a request target (`/path?query`) is under `base`; one that is no URL is not. */
function targetIn(base: string, target: string): boolean {
  try {
    return inBase(new URL(target, 'http://x').pathname, base);
  } catch {
    return false;
  }
}

async function bodyOf(req: NodeRequest): Promise<Uint8Array | string | undefined> {
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  // Parsed already by a body parser (Express's express.json(), Fastify): sent on as JSON.
  if (req.body !== undefined && req.body !== null) {
    if (typeof req.body === 'string' || req.body instanceof Uint8Array) return req.body;
    return JSON.stringify(req.body);
  }
  if (req.readableEnded) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) throw new RangeError('body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * Adapts a web-standard handler (the inspector's) to Node's `(req, res, next)`: node:http,
 * Express (`app.use(toNodeHandler(handle))`), Fastify (`reply.hijack()` then `req.raw, reply.raw`) and Koa
 * (`ctx.respond = false` then `ctx.req, ctx.res`). Streams the response (server-sent events included)
 * and aborts the request's signal when the client goes away.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * const handle = inspector(runner, { basePath: '/ops/chains', authorize: (req) => isAdmin(req) });
 * createServer(toNodeHandler(handle)).listen(3000);
 * ```
 */
export function toNodeHandler(handle: InspectorHandler): NodeInspectorHandler {
  if (typeof handle !== 'function') throw new TypeError('Expected the handler returned by inspector(runner, options).');
  const base = basePaths.get(handle);
  return async (req, res, next) => {
    const r = req as NodeRequest;
    const target = r.originalUrl ?? req.url ?? '/';
    // The app's other routes go on untouched: their bodies unread, their methods and Host headers not ours to judge.
    if (base !== undefined && !targetIn(base, target)) {
      if (next) return next();
      res.writeHead(404).end();
      return;
    }
    const method = req.method ?? 'GET';
    if (!ALLOWED_METHODS.has(method)) {
      res.writeHead(405, { allow: 'GET, HEAD, POST' }).end();
      return;
    }
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    let response: Response;
    try {
      const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
      let url: URL;
      try {
        url = new URL(target, `${secure ? 'https' : 'http'}://${req.headers.host ?? 'localhost'}`);
      } catch {
        res.writeHead(400).end();
        return;
      }
      const headers = new Headers();
      for (const [key, value] of Object.entries(req.headers)) {
        if (value === undefined) continue;
        if (Array.isArray(value)) for (const v of value) headers.append(key, v);
        else headers.set(key, value);
      }
      let body: Uint8Array | string | undefined;
      try {
        body = await bodyOf(r);
      } catch {
        res.writeHead(413).end();
        return;
      }
      response = await handle(
        new Request(url, {
          method,
          headers,
          ...(body !== undefined && { body }),
          signal: abort.signal,
        }),
      );
    } catch (error) {
      if (next) return next(error);
      if (!res.headersSent) res.writeHead(500);
      res.end();
      return;
    }
    if (outside.has(response) && next) return next();
    const headers: Record<string, string | string[]> = {};
    response.headers.forEach((value, key) => {
      if (key !== 'set-cookie') headers[key] = value;
    });
    const cookies = response.headers.getSetCookie();
    if (cookies.length > 0) headers['set-cookie'] = cookies;
    res.writeHead(response.status, headers);
    if (!response.body || req.method === 'HEAD') {
      res.end();
      return;
    }
    res.flushHeaders();
    let reader: ReadableStreamDefaultReader<Uint8Array>;
    try {
      reader = response.body.getReader();
    } catch {
      res.end(); // a body read already (a Response shared between requests): what was sent is all
      return;
    }
    const stop = (): void => void reader.cancel().catch(() => undefined);
    res.on('close', stop);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        if (!res.write(value)) await new Promise<void>((resolve) => res.once('drain', resolve).once('close', resolve));
        if (res.destroyed) break;
      }
    } catch {
      // the client went away, or the stream failed: end what was sent
    } finally {
      res.off('close', stop);
      res.end();
    }
  };
}
