import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, httpInvoker } from 'chainkit';

// A real HTTP server on 127.0.0.1: the tool name picks the behaviour.
let server: Server;
let baseUrl: string;
const seen: { url: string; headers: Record<string, unknown>; body: string }[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      seen.push({ url: req.url!, headers: req.headers, body });
      const tool = req.url!.split('/').pop()!;
      const status = Number(/^s(\d{3})$/.exec(tool)?.[1] ?? 200);
      if (tool === 'hang') return; // never answers
      if (tool === 'reset') return req.socket.destroy();
      if (tool === 'text') return res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
      if (status === 429) return res.writeHead(429, { 'retry-after': '7' }).end(JSON.stringify({ error: 'rate_limit_exceeded', message: 'slow down' }));
      if (status === 503) return res.writeHead(503, { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }).end('<html>Service Unavailable</html>');
      if (status !== 200) return res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `e${status}`, message: 'nope', password: 'hunter2' }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: JSON.parse(body) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const tool = (name: string, timeoutMs = 2000) => defineTool({ name, description: name, input: z.object({ q: z.string() }), output: z.unknown(), effect: 'write', timeoutMs, retry: false });
const names = ['ok', 's400', 's401', 's403', 's404', 's429', 's500', 's503', 's504', 'text', 'hang', 'reset'];

describe('httpInvoker against a real HTTP server', () => {
  const runner = () => createRunner({
    invoker: httpInvoker({ baseUrl, headers: (call) => ({ 'x-user': String(call.context.userId ?? '') }) }),
    tools: names.map((n) => tool(n, n === 'hang' ? 300 : 2000)),
    retry: { timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 }, rate_limited: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
  });

  it('posts JSON with headers and an idempotency key, and returns the JSON body', async () => {
    const r = await runner().invoke('ok', { q: 'hi' }, { context: { userId: 'u1' }, idempotencyKey: 'k-1' });
    expect(r.status === 'completed' && r.output).toEqual({ echo: { q: 'hi' } });
    const req = seen.at(-1)!;
    expect(req.url).toBe('/api/tools/ok');
    expect(req.headers).toMatchObject({ 'content-type': 'application/json', 'idempotency-key': 'k-1', 'x-user': 'u1' });
  });

  it.each([
    ['s400', 'invalid_input'], ['s401', 'authentication_required'], ['s403', 'permission_denied'], ['s404', 'not_found'],
    ['s429', 'rate_limited'], ['s500', 'internal'], ['s503', 'unavailable'], ['s504', 'timeout'],
  ])('classifies %s as %s', async (name, category) => {
    const r = await runner().invoke(name, { q: 'x' }, { timeoutMs: 60_000 });
    expect(r.status === 'failed' && r.error.category).toBe(category);
    expect(r.status === 'failed' && r.error.message).not.toContain('hunter2');
  });

  it('reads Retry-After as seconds and as an HTTP date', async () => {
    const limited = await runner().invoke('s429', { q: 'x' }, { timeoutMs: 60_000 });
    expect(limited.status === 'failed' && limited.error).toMatchObject({ retryAfterMs: 7000, message: expect.stringContaining('rate_limit_exceeded: slow down') });
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
    const refused = createRunner({ invoker: httpInvoker({ baseUrl: `http://127.0.0.1:${freed}` }), tools: [tool('ok')], retry: { network: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } } });
    const r = await refused.invoke('ok', { q: 'x' });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'network', code: 'ECONNREFUSED' });
  });

  it('rejects a bad baseUrl', () => {
    expect(() => httpInvoker({ baseUrl: 'tools.internal' })).toThrow(/http\(s\) URL/);
  });
});
