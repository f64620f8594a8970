// The inspector on Node's request/response pair (node:http, Express, Fastify's raw pair, Koa's ctx.req/res).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { outside, type InspectorHandler } from './handler.js';

/** Most a request body may hold (actions are small JSON). */
const MAX_BODY = 64 * 1024;

/** A Node request as frameworks hand it: Express keeps the full path in `originalUrl` and may have parsed `body`. */
type NodeRequest = IncomingMessage & { originalUrl?: string; body?: unknown };

/** A Node-style handler: `(req, res, next?)`; requests outside the inspector go to `next` (or get a 404). */
export type NodeInspectorHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => Promise<void>;

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
  return async (req, res, next) => {
    const r = req as NodeRequest;
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    let response: Response;
    try {
      const host = typeof req.headers.host === 'string' ? req.headers.host : 'localhost';
      const secure = (req.socket as { encrypted?: boolean }).encrypted === true;
      const url = new URL(r.originalUrl ?? req.url ?? '/', `${secure ? 'https' : 'http'}://${host}`);
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
          method: req.method ?? 'GET',
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
    const reader = response.body.getReader();
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
