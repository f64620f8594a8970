import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, httpInvoker } from 'chainkit';

// A real HTTP server on 127.0.0.1: the tool name picks the behaviour.
let server: Server;
let baseUrl: string;
const seen: { method: string; url: string; headers: Record<string, unknown>; body: string }[] = [];
// A second origin (another port): a redirect there must never be followed.
let other: Server;
let otherUrl: string;
const otherSeen: { method: string; headers: Record<string, unknown>; body: string }[] = [];
/** Streams 64 KiB chunks until the client goes away: a body that is never read whole. */
function endless(res: import('node:http').ServerResponse, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(64 * 1024, 'a');
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump);
  };
  res.on('error', () => {});
  pump();
}
beforeAll(async () => {
  other = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      otherSeen.push({ method: req.method!, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"stolen":true}');
    });
  });
  await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
  otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/api/tools/ok`;
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const tool = req.url!.split('/').pop()!;
      const status = Number(/^s(\d{3})$/.exec(tool)?.[1] ?? 200);
      const redirect = /^r(30\d)(cross)?$/.exec(tool);
      if (redirect)
        return res.writeHead(Number(redirect[1]), { location: redirect[2] ? otherUrl : '/api/tools/ok' }).end('moved');
      if (tool === 'loop') return res.writeHead(307, { location: './loop' }).end();
      if (tool === 'huge') return endless(res);
      if (tool === 'biglen')
        return res
          .writeHead(200, { 'content-type': 'application/json', 'content-length': 200 * 1024 * 1024 })
          .write('{"a":'); // then nothing
      if (tool === 'big500') return endless(res, 500);
      if (req.method !== 'POST')
        return res.writeHead(200, { 'content-type': 'application/json' }).end('{"method":"GET"}');
      if (tool === 'hang') return; // never answers
      if (tool === 'reset') return req.socket.destroy();
      if (tool === 'text') return res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
      if (status === 429)
        return res
          .writeHead(429, { 'retry-after': '7' })
          .end(JSON.stringify({ error: 'rate_limit_exceeded', message: 'slow down' }));
      if (status === 503)
        return res
          .writeHead(503, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() })
          .end('<html>Service Unavailable</html>');
      if (status !== 200)
        return res
          .writeHead(status, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: `e${status}`, message: 'nope', password: 'hunter2' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: JSON.parse(body) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});
afterAll(async () => {
  for (const s of [server, other]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const tool = (name: string, timeoutMs = 2000) =>
  defineTool({
    name,
    description: name,
    input: z.object({ q: z.string() }),
    output: z.unknown(),
    effect: 'write',
    timeoutMs,
    retry: false,
  });
const names = [
  'ok',
  's400',
  's401',
  's403',
  's404',
  's429',
  's500',
  's503',
  's504',
  'text',
  'hang',
  'reset',
  'r301',
  'r302',
  'r303',
  'r307',
  'r308',
  'r307cross',
  'r308cross',
  'r303cross',
  'loop',
  'huge',
  'biglen',
  'big500',
];

describe('httpInvoker against a real HTTP server', () => {
  const runner = () =>
    createRunner({
      invoker: httpInvoker({ baseUrl, headers: (call) => ({ 'x-user': String(call.context.userId ?? '') }) }),
      tools: names.map((n) => tool(n, n === 'hang' ? 300 : 2000)),
      retry: {
        timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 },
        rate_limited: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 },
      },
    });

  it('posts JSON with headers and an idempotency key, and returns the JSON body', async () => {
    const r = await runner().invoke('ok', { q: 'hi' }, { context: { userId: 'u1' }, idempotencyKey: 'k-1' });
    expect(r.status === 'completed' && r.output).toEqual({ echo: { q: 'hi' } });
    const req = seen.at(-1)!;
    expect(req.url).toBe('/api/tools/ok');
    expect(req.headers).toMatchObject({ 'content-type': 'application/json', 'idempotency-key': 'k-1', 'x-user': 'u1' });
  });

  it.each([
    ['s400', 'invalid_input'],
    ['s401', 'authentication_required'],
    ['s403', 'permission_denied'],
    ['s404', 'not_found'],
    ['s429', 'rate_limited'],
    ['s500', 'internal'],
    ['s503', 'unavailable'],
    ['s504', 'timeout'],
  ])('classifies %s as %s', async (name, category) => {
    const r = await runner().invoke(name, { q: 'x' }, { timeoutMs: 60_000 });
    expect(r.status === 'failed' && r.error.category).toBe(category);
    expect(r.status === 'failed' && r.error.message).not.toContain('hunter2');
  });

  it('reads Retry-After as seconds and as an HTTP date', async () => {
    const limited = await runner().invoke('s429', { q: 'x' }, { timeoutMs: 60_000 });
    expect(limited.status === 'failed' && limited.error).toMatchObject({
      retryAfterMs: 7000,
      message: expect.stringContaining('rate_limit_exceeded: slow down'),
    });
    const down = await runner().invoke('s503', { q: 'x' }, { timeoutMs: 60_000 });
    expect(down.status === 'failed' && down.error.retryAfterMs).toBeGreaterThan(25_000);
    expect(down.status === 'failed' && down.error.message).toContain('<html>Service Unavailable</html>');
  });

  it('returns a non-JSON 2xx body as text', async () => {
    const r = await runner().invoke('text', { q: 'x' });
    expect(r.status === 'completed' && r.output).toBe('plain words');
  });

  it('aborts a hanging request on timeout, and classifies reset connections and refused ports as network', async () => {
    const hang = await runner().invoke('hang', { q: 'x' });
    expect(hang.status === 'failed' && hang.error).toMatchObject({ category: 'timeout', code: 'attempt_timeout' });
    const reset = await runner().invoke('reset', { q: 'x' });
    expect(reset.status === 'failed' && reset.error.category).toBe('network');
    const spare = createServer();
    await new Promise<void>((r) => spare.listen(0, '127.0.0.1', r));
    const freed = (spare.address() as AddressInfo).port;
    await new Promise((r) => spare.close(r)); // nothing listens there now: connection refused
    const refused = createRunner({
      invoker: httpInvoker({ baseUrl: `http://127.0.0.1:${freed}` }),
      tools: [tool('ok')],
      retry: { network: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    const r = await refused.invoke('ok', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'network', code: 'ECONNREFUSED' });
  });

  it('rejects a bad baseUrl', () => {
    expect(() => httpInvoker({ baseUrl: 'tools.internal' })).toThrow(/http\(s\) URL/);
  });
});

describe('httpInvoker redirects: never to another origin, never a write turned into a GET', () => {
  const runner = (options: Partial<Parameters<typeof httpInvoker>[0]> = {}) =>
    createRunner({
      invoker: httpInvoker({ baseUrl, headers: { 'x-api-key': 'key-123' }, ...options }),
      tools: names.map((n) => tool(n)),
    });

  it.each(['r307cross', 'r308cross', 'r303cross'])(
    '%s: refuses a redirect to another origin; the other origin sees nothing',
    async (name) => {
      otherSeen.length = 0;
      const r = await runner().invoke(name, { q: 'secret body' }, { idempotencyKey: 'k-cross' });
      expect(r.status === 'failed' && r.error).toMatchObject({
        category: 'validation',
        code: 'redirect_refused',
        retryable: false,
        attempts: 1,
      });
      expect(r.status === 'failed' && r.error.message).toMatch(/another origin/);
      expect(otherSeen).toEqual([]);
    },
  );

  it.each(['r301', 'r302', 'r303'])(
    '%s: refuses to turn the POST into a GET, even on the same origin',
    async (name) => {
      const before = seen.length;
      const r = await runner().invoke(name, { q: 'x' });
      expect(r.status === 'failed' && r.error).toMatchObject({
        category: 'validation',
        code: 'redirect_refused',
        retryable: false,
      });
      expect(seen.slice(before).map((s) => `${s.method} ${s.url}`)).toEqual([`POST /api/tools/${name}`]);
    },
  );

  it.each(['r307', 'r308'])(
    '%s on the same origin: follows it with the same method, body and headers',
    async (name) => {
      const before = seen.length;
      const r = await runner().invoke(name, { q: 'again' }, { idempotencyKey: 'k-same' });
      expect(r.status === 'completed' && r.output).toEqual({ echo: { q: 'again' } });
      const hops = seen.slice(before);
      expect(hops.map((s) => `${s.method} ${s.url}`)).toEqual([`POST /api/tools/${name}`, 'POST /api/tools/ok']);
      expect(hops[1]!.body).toBe('{"q":"again"}');
      expect(hops[1]!.headers).toMatchObject({ 'idempotency-key': 'k-same', 'x-api-key': 'key-123' });
    },
  );

  it('stops a redirect loop after 5 hops', async () => {
    const before = seen.length;
    const r = await runner().invoke('loop', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({
      code: 'redirect_refused',
      message: expect.stringMatching(/more than 5 redirects/),
    });
    expect(seen.length - before).toBe(6);
  });
});

describe('httpInvoker response size: capped while streaming', () => {
  const runner = (options: Partial<Parameters<typeof httpInvoker>[0]> = {}) =>
    createRunner({
      invoker: httpInvoker({ baseUrl, ...options }),
      tools: names.map((n) => tool(n, 10_000)),
    });

  it('fails an endless body past the default 10 MiB cap instead of reading it whole', async () => {
    const r = await runner().invoke('huge', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'validation',
      code: 'response_too_large',
      retryable: false,
      attempts: 1,
    });
    expect(r.status === 'failed' && r.error.message).toContain('10485760 bytes');
  });

  it('takes a configured cap', async () => {
    const r = await runner({ maxBodyBytes: 100_000 }).invoke('huge', { q: 'x' });
    expect(r.status === 'failed' && r.error.message).toContain('100000 bytes');
    const small = await runner({ maxBodyBytes: 100_000 }).invoke('ok', { q: 'x' });
    expect(small.status).toBe('completed');
  });

  it('refuses a declared Content-Length over the cap before reading anything', async () => {
    const r = await runner().invoke('biglen', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({
      code: 'response_too_large',
      message: expect.stringContaining('Content-Length 209715200'),
    });
  });

  it('keeps the status of an error answer whose body is too large', async () => {
    const r = await runner({ maxBodyBytes: 1000 }).invoke('big500', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'internal', code: 'http_500' });
  });

  it('refuses a bad maxBodyBytes', () => {
    expect(() => httpInvoker({ baseUrl, maxBodyBytes: 0 })).toThrow(/maxBodyBytes/);
    expect(() => httpInvoker({ baseUrl, maxBodyBytes: Infinity })).toThrow(/maxBodyBytes/);
  });
});
