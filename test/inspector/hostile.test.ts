// The inspector against what a red-team pass sent it: the app's other routes left untouched by the
// Node mount (bodies, methods, Host), bodies read only up to the limit, HEAD on the event streams,
// a Response shared by `authorize`, names that look like secrets, bad ids and cursors, stream headers.
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref } from '../../src/index.js';
import { inspector, toNodeHandler } from '../../src/inspector/index.js';
import { memoryRunStore } from '../../src/testing/index.js';
import { makeRunner, serve } from './setup.js';

const BASE = '/ops/chains';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A raw request (fetch sets its own Host and refuses TRACE): status and body. */
function raw(
  origin: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ hostname, port, method, path, headers, setHost: !('host' in headers) }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function expressApp() {
  const { runner } = makeRunner();
  cleanups.push(() => runner.close());
  const app = express();
  app.use(toNodeHandler(inspector(runner, { basePath: BASE, authorize: () => true })));
  app.post('/echo', express.text(), (req, res) => void res.send(`got ${String(req.body)}`));
  app.post('/upload', (req, res) => {
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () => void res.send(`stored ${size} bytes`));
  });
  app.all('/ping', (_req, res) => void res.send('pong'));
  app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).send('app error handler');
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  cleanups.push(() => new Promise((r) => server.close(r)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the Node mount leaves the app its own requests', () => {
  it("does not read the bodies of the app's other routes, nor refuse their large uploads", async () => {
    const origin = await expressApp();
    const echo = await fetch(`${origin}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hello app',
    });
    expect(await echo.text()).toBe('got hello app');
    const upload = await fetch(`${origin}/upload`, { method: 'POST', body: 'x'.repeat(100_000) });
    expect(upload.status).toBe(200);
    expect(await upload.text()).toBe('stored 100000 bytes');
  });

  it("passes a TRACE or a request with a Host it cannot parse to the app's route; under basePath answers 405 or 400", async () => {
    const origin = await expressApp();
    expect(await raw(origin, 'TRACE', '/ping')).toEqual({ status: 200, body: 'pong' });
    expect(await raw(origin, 'GET', '/ping', { host: 'a:99999' })).toEqual({ status: 200, body: 'pong' });
    expect((await raw(origin, 'TRACE', `${BASE}/api/overview`)).status).toBe(405);
    expect((await raw(origin, 'GET', `${BASE}/api/overview`, { host: 'a:99999' })).status).toBe(400);
  });
});

describe('the web-standard handler', () => {
  it('reads an action body only up to 64 kB, before authorize refuses it', async () => {
    const { runner } = makeRunner();
    cleanups.push(() => runner.close());
    const handle = inspector(runner, { basePath: BASE, authorize: () => false });
    let pulled = 0;
    const chunk = new Uint8Array(16 * 1024).fill(0x20);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += chunk.byteLength;
        if (pulled > 200 * 1024 * 1024) controller.close();
        else controller.enqueue(chunk);
      },
    });
    const res = await handle(
      new Request(`http://x${BASE}/api/action`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
        duplex: 'half',
      } as RequestInit),
    );
    expect(res.status).toBe(403);
    expect(pulled).toBeLessThan(256 * 1024); // not the 200 MB offered
  });

  it('answers HEAD on the event streams with their headers and opens no live page', async () => {
    const { runner } = makeRunner();
    cleanups.push(() => runner.close());
    const handle = inspector(runner, { basePath: BASE, authorize: () => true });
    for (let i = 0; i < 20; i++) {
      const live = await handle(new Request(`http://x${BASE}/api/live`, { method: 'HEAD' }));
      expect(live.status).toBe(200);
      expect(live.body).toBeNull();
      expect(live.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const events = await handle(new Request(`http://x${BASE}/api/events?id=r1`, { method: 'HEAD' }));
      expect(events.body).toBeNull();
    }
    expect(runner.events.listenerCount('step:end')).toBe(0); // an open page listens to the runner's step events
  });

  it('sends no-store on the event streams too', async () => {
    const { runner } = makeRunner();
    cleanups.push(() => runner.close());
    const handle = inspector(runner, { basePath: BASE, authorize: () => true });
    const abort = new AbortController();
    const live = await handle(new Request(`http://x${BASE}/api/live`, { signal: abort.signal }));
    expect(live.headers.get('cache-control')).toContain('no-store');
    abort.abort();
    await live.body?.cancel().catch(() => undefined);
  });

  it('answers 400, not 500, to a run id or a cursor chainkit refuses', async () => {
    const h = makeRunner();
    const handle = inspector(h.runner, { basePath: BASE, authorize: () => true });
    const server = await serve(handle);
    cleanups.push(() => h.runner.close(), server.close);
    for (const path of [
      '/api/overview?cursor=abc',
      '/api/run?id=%01',
      `/api/run?id=${'r'.repeat(256)}`,
      '/api/events?id=a%0Ab',
    ])
      expect({ path, status: (await fetch(`${server.origin}${BASE}${path}`)).status }).toEqual({ path, status: 400 });
  });
});

describe('authorize returning one Response for every request', () => {
  it('sends it each time (its body once) and never takes the process down', async () => {
    const { runner } = makeRunner();
    const shared = new Response('Sign in first.', { status: 401, headers: { 'www-authenticate': 'Basic' } });
    const server = await serve(inspector(runner, { basePath: BASE, authorize: () => shared }));
    cleanups.push(() => runner.close(), server.close);
    const first = await fetch(`${server.origin}${BASE}/api/overview`);
    expect([first.status, await first.text()]).toEqual([401, 'Sign in first.']);
    for (let i = 0; i < 3; i++) {
      const again = await fetch(`${server.origin}${BASE}/api/overview`);
      expect([again.status, again.headers.get('www-authenticate')]).toEqual([401, 'Basic']);
      await again.text();
    }
  });
});

describe('names that look like secrets', () => {
  it('shows the counts of a chain named password_reset and the transitions of a tool named refresh_token', async () => {
    const refreshToken = defineTool({
      name: 'refresh_token',
      description: 'Refreshes a token',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
    });
    const sendEmail = defineTool({
      name: 'send_email',
      description: 'Sends an email',
      input: z.object({ ok: z.boolean() }),
      output: z.object({ sent: z.boolean() }),
      effect: 'read',
    });
    const passwordReset = defineChain({
      name: 'password_reset',
      input: z.object({}),
      steps: [
        { id: 'refresh', tool: refreshToken, input: {} },
        { id: 'mail', tool: sendEmail, input: { ok: ref('refresh', 'ok') } },
      ],
    });
    const runner = createRunner({
      invoker: functionInvoker([refreshToken, sendEmail], {
        refresh_token: () => ({ ok: true }),
        send_email: () => ({ sent: true }),
      }),
      tools: [refreshToken, sendEmail],
      stores: { runs: memoryRunStore() },
    });
    cleanups.push(() => runner.close());
    for (let i = 0; i < 3; i++) expect((await runner.run(passwordReset, {})).status).toBe('completed');
    const handle = inspector(runner, { basePath: BASE, authorize: () => true });
    const overview = (await (await handle(new Request(`http://x${BASE}/api/overview`))).json()) as {
      counts: { byChain: Record<string, { total: number }> };
      learned: { transitions: Record<string, Record<string, { count: number }>> };
    };
    expect(overview.counts.byChain.password_reset?.total).toBe(3);
    expect(overview.learned.transitions.refresh_token?.send_email?.count).toBe(3);
  });
});
