// The inspector mounted in Express (through toNodeHandler, behind express.json()) and in Hono (the
// web-standard handler as it is): the page, authorization, the CSRF check and an action.
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { inspector, toNodeHandler } from '../../src/inspector/index.js';
import { CONTEXT, gated, INPUT, makeRunner } from './setup.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
const BASE = '/ops/chains';
const isAdmin = (req: Request): boolean => req.headers.get('x-user') === 'admin';

describe('inspector in Express', () => {
  it('serves the page under basePath, leaves other routes to the app, and acts with a body parser in front', async () => {
    const { runner, calls } = makeRunner();
    cleanups.push(() => runner.close());
    const app = express();
    app.use(express.json()); // parses the action's body before the inspector sees it
    app.use(toNodeHandler(inspector(runner, { basePath: BASE, authorize: isAdmin })));
    app.get('/health', (_req, res) => void res.send('ok'));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const admin = { 'x-user': 'admin' };

    expect(await (await fetch(`${origin}/health`)).text()).toBe('ok');
    expect((await fetch(`${origin}${BASE}/`)).status).toBe(403);
    const page = await fetch(`${origin}${BASE}/`, { headers: admin });
    expect(page.status).toBe(200);
    const html = await page.text();
    const cookie = page.headers.getSetCookie()[0]!.split(';')[0]!;
    const token = /name="chainkit-csrf" content="([^"]+)"/.exec(html)![1]!;
    expect((await fetch(`${origin}${BASE}/app.js`, { headers: admin })).headers.get('content-type')).toMatch(
      /javascript/,
    );

    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    const act = (headers: Record<string, string>) =>
      fetch(`${origin}${BASE}/api/action`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...admin, ...headers },
        body: JSON.stringify({ action: 'decide', runId: parked.runId, approved: true }),
      });
    expect((await act({ cookie })).status).toBe(403);
    const ok = await act({ cookie, 'x-chainkit-csrf': token });
    expect(await ok.json()).toEqual({ outcome: 'decided', status: 'completed' });
    expect(calls.pay).toBe(1);
  });

  it('works mounted on a sub-path (app.use(path, …): the full URL is kept)', async () => {
    const { runner } = makeRunner();
    cleanups.push(() => runner.close());
    const app = express();
    app.use(BASE, toNodeHandler(inspector(runner, { basePath: BASE, authorize: () => true })));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    cleanups.push(() => new Promise((r) => server.close(r)));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const res = await fetch(`${origin}${BASE}/api/overview`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ capabilities: { readOnly: false } });
  });
});

describe('inspector in Hono', () => {
  it('is a web-standard handler: app.all(basePath/*, (c) => handle(c.req.raw))', async () => {
    const { runner, calls } = makeRunner();
    cleanups.push(() => runner.close());
    const handle = inspector(runner, { basePath: BASE, authorize: isAdmin });
    const app = new Hono();
    app.all(`${BASE}/*`, (c) => handle(c.req.raw));
    app.get('/', (c) => c.text('home'));
    const admin = { 'x-user': 'admin' };

    expect(await (await app.request('/')).text()).toBe('home');
    expect((await app.request(`${BASE}/api/overview`)).status).toBe(403);
    const page = await app.request(`${BASE}/`, { headers: admin });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    const cookie = page.headers.getSetCookie()[0]!.split(';')[0]!;
    const token = /name="chainkit-csrf" content="([^"]+)"/.exec(await page.text())![1]!;
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    const overview = (await (await app.request(`${BASE}/api/overview`, { headers: admin })).json()) as {
      inbox: { runId: string }[];
    };
    expect(overview.inbox.map((r) => r.runId)).toEqual([parked.runId]);
    const res = await app.request(`${BASE}/api/action`, {
      method: 'POST',
      headers: { ...admin, 'content-type': 'application/json', cookie, 'x-chainkit-csrf': token },
      body: JSON.stringify({ action: 'decide', runId: parked.runId, approved: false }),
    });
    expect(await res.json()).toEqual({ outcome: 'decided', status: 'declined' });
    expect(calls.pay).toBe(0);
    expect((await runner.getRun(parked.runId))?.status).toBe('declined');
  });
});
