// The inspector's handler mounted in node:http: authorization of every request, the anti-CSRF token
// of actions, the CSP of every response, no secret in any response, read-only mode, and the actions.
import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { CSP, inspector, type InspectorAction } from '../../src/inspector/index.js';
import { CONTEXT, failing, gated, INPUT, long, makeRunner, SECRETS, serve, session, until } from './setup.js';
import { SignalRefused } from '../../src/index.js';

const BASE = '/ops/chains';
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function mount(
  options: {
    authorize?: (req: Request, action: InspectorAction) => boolean | Response | Promise<boolean | Response>;
    readOnly?: boolean;
    csrfSecret?: string;
  } = {},
) {
  const h = makeRunner();
  const asked: InspectorAction[] = [];
  const handle = inspector(h.runner, {
    basePath: BASE,
    readOnly: options.readOnly ?? false,
    ...(options.csrfSecret !== undefined && { csrfSecret: options.csrfSecret }),
    authorize: async (req, action) => {
      asked.push(action);
      return options.authorize ? options.authorize(req, action) : true;
    },
  });
  const server = await serve(handle);
  cleanups.push(() => h.runner.close(), server.close);
  return { ...h, ...server, handle, asked };
}

const post = (origin: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${origin}${BASE}/api/action`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** Reads an event stream until it ends (or `ms`). */
async function readStream(res: Response, ms = 3_000): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const next = await Promise.race([
      reader.read(),
      new Promise<{ done: true; value: undefined }>((r) =>
        setTimeout(() => r({ done: true, value: undefined }), end - Date.now()),
      ),
    ]);
    if (next.done) break;
    text += decoder.decode(next.value);
  }
  await reader.cancel().catch(() => undefined);
  return text;
}

describe('inspector(): building it', () => {
  it('refuses to build without authorize (a type error too)', () => {
    const { runner } = makeRunner();
    cleanups.push(() => runner.close());
    // @ts-expect-error authorize is required
    expect(() => inspector(runner, { basePath: '/x' })).toThrow(/authorize/);
    expect(() => inspector(runner, { basePath: 'x', authorize: () => true })).toThrow(/basePath/);
  });
});

describe('inspector() in node:http', () => {
  it('asks authorize for every request; refused requests get 403 (or the Response given) and no data', async () => {
    const { origin, runner, asked } = await mount({
      authorize: (req) =>
        req.headers.get('authorization') === 'Bearer ok'
          ? true
          : req.headers.get('authorization')
            ? false
            : new Response('sign in', { status: 401, headers: { 'www-authenticate': 'Bearer' } }),
    });
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    expect(parked.status).toBe('awaiting_confirmation');
    const paths = [
      '/',
      '/app.js',
      '/app.css',
      '/api/overview',
      `/api/run?id=${parked.runId}`,
      `/api/events?id=${parked.runId}`,
      '/api/live',
      '/nope',
    ];
    for (const p of paths) {
      const anonymous = await fetch(`${origin}${BASE}${p}`);
      expect(anonymous.status, p).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toBe('Bearer');
      const wrong = await fetch(`${origin}${BASE}${p}`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status, p).toBe(403);
      const body = await wrong.text();
      expect(body).not.toContain(parked.runId);
      expect(body).not.toContain('pay_gated');
    }
    const refused = await post(
      origin,
      { action: 'decide', runId: parked.runId, approved: true },
      { authorization: 'Bearer nope' },
    );
    expect(refused.status).toBe(403);
    expect(asked.at(-1)).toBe('decide');
    expect((await runner.getRun(parked.runId))?.status).toBe('awaiting_confirmation');
    const ok = await fetch(`${origin}${BASE}/api/overview`, { headers: { authorization: 'Bearer ok' } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { inbox: { runId: string }[] }).inbox.map((r) => r.runId)).toEqual([parked.runId]);
  });

  it('passes each action to authorize, and refuses actions without a valid anti-CSRF token', async () => {
    const { origin, runner, asked, calls } = await mount({ authorize: (_req, action) => action !== 'cancel' });
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    const { cookie, token } = await session(origin, BASE);
    expect(cookie).toMatch(/^chainkit_inspector_csrf=/);
    const body = { action: 'decide', runId: parked.runId, approved: true };
    // No token, a wrong one, a token without its cookie, one from another handler, a cross-site request: all 403, nothing decided.
    const other = await mount({ csrfSecret: 'another-secret-0123456789' });
    const foreign = await session(other.origin, BASE);
    for (const headers of <Record<string, string>[]>[
      { cookie },
      { cookie, 'x-chainkit-csrf': `${token}x` },
      { 'x-chainkit-csrf': token },
      { cookie: foreign.cookie, 'x-chainkit-csrf': foreign.token },
      { cookie, 'x-chainkit-csrf': token, origin: 'https://evil.example' },
      { cookie, 'x-chainkit-csrf': token, 'sec-fetch-site': 'cross-site' },
    ]) {
      const res = await post(origin, body, headers);
      expect(res.status).toBe(403);
      expect(await res.text()).toMatch(/CSRF/);
    }
    expect(calls.pay).toBe(0);
    // A form post (not JSON) is no action either.
    const form = await fetch(`${origin}${BASE}/api/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-chainkit-csrf': token },
      body: 'action=decide',
    });
    expect(form.status).toBe(400);
    const ok = await post(origin, body, { cookie, 'x-chainkit-csrf': token });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ outcome: 'decided', status: 'completed' });
    expect(calls.pay).toBe(1);
    expect(asked).toContain('decide');
    // authorize said no to cancel: 403 even with a valid token.
    const cancel = await post(origin, { action: 'cancel', runId: parked.runId }, { cookie, 'x-chainkit-csrf': token });
    expect(cancel.status).toBe(403);
    expect(asked.at(-1)).toBe('cancel');
  });

  it('decides a gate exactly once however many clicks', async () => {
    const { origin, runner, calls } = await mount();
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    const { cookie, token } = await session(origin, BASE);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        post(origin, { action: 'decide', runId: parked.runId, approved: true }, { cookie, 'x-chainkit-csrf': token }),
      ),
    );
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(answers.filter((r) => r.status === 409)).toHaveLength(4);
    expect(calls.pay).toBe(1);
    expect((await runner.getRun(parked.runId))?.status).toBe('completed');
  });

  it('cancels a running run (its tool sees the abort) and re-runs a failed one as a linked new run', async () => {
    const { origin, runner, calls } = await mount();
    const { cookie, token } = await session(origin, BASE);
    const running = runner.run(long, { n: 1 }, { runId: 'long-1' });
    await until(() => calls.slowStarted === 1);
    const cancel = await post(origin, { action: 'cancel', runId: 'long-1' }, { cookie, 'x-chainkit-csrf': token });
    expect(await cancel.json()).toEqual({ outcome: 'cancelled' });
    expect(calls.slowAborted).toBe(1);
    expect((await running).status).toBe('failed');

    expect((await runner.run(failing, INPUT, { runId: 'f-1', context: CONTEXT })).status).toBe('failed');
    calls.explodeFails = false;
    const rerun = await post(origin, { action: 'rerun', runId: 'f-1' }, { cookie, 'x-chainkit-csrf': token });
    expect(await rerun.json()).toEqual({ outcome: 'started', runId: 'f-1~rerun1', rerunOf: 'f-1' });
    await until(async () => (await runner.getRun('f-1~rerun1'))?.status === 'completed');
    const view = (await (await fetch(`${origin}${BASE}/api/run?id=${encodeURIComponent('f-1~rerun1')}`)).json()) as {
      run: { rerunOf: string; steps: { id: string }[] };
    };
    expect(view.run.rerunOf).toBe('f-1');
    expect(view.run.steps.map((s) => s.id)).toEqual(['find', 'boom']);
  });

  it('sends a signal through runner.signal(runId, name, payload) where the runner has it', async () => {
    const { runner } = makeRunner();
    const sent: unknown[][] = [];
    // A runner with signal() (the "flow" step kinds add it): the inspector finds it at run time.
    const withSignal = Object.assign(Object.create(runner) as typeof runner, {
      signal: async (...args: unknown[]) => (sent.push(args), 'delivered'),
    });
    const asked: InspectorAction[] = [];
    const server = await serve(
      inspector(withSignal, { basePath: BASE, authorize: (_req, action) => (asked.push(action), true) }),
    );
    cleanups.push(() => runner.close(), server.close);
    const overview = (await (await fetch(`${server.origin}${BASE}/api/overview`)).json()) as {
      capabilities: { signal: boolean };
    };
    expect(overview.capabilities.signal).toBe(true);
    const { cookie, token } = await session(server.origin, BASE);
    const res = await post(
      server.origin,
      { action: 'signal', runId: 'r-9', name: 'payment_received', payload: { amount: 5 } },
      { cookie, 'x-chainkit-csrf': token },
    );
    expect(await res.json()).toEqual({ outcome: 'delivered' });
    expect(sent).toEqual([['r-9', 'payment_received', { amount: 5 }]]);
    expect(asked.at(-1)).toBe('signal');
    // A payload the step's schema refuses (runner.signal rejects with SignalRefused): 400 with the reason, not a 500.
    const refusing = Object.assign(Object.create(runner) as typeof runner, {
      signal: async () => Promise.reject(new SignalRefused('the payload does not match', [])),
    });
    const server2 = await serve(inspector(refusing, { basePath: BASE, authorize: () => true }));
    cleanups.push(server2.close);
    const s2 = await session(server2.origin, BASE);
    const refused = await post(
      server2.origin,
      { action: 'signal', runId: 'r-9', name: 'payment_received', payload: {} },
      { cookie: s2.cookie, 'x-chainkit-csrf': s2.token },
    );
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ error: 'the payload does not match' });
  });

  it('read-only: shows runs, refuses every action', async () => {
    const { origin, runner, calls } = await mount({ readOnly: true });
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    const { cookie, token } = await session(origin, BASE);
    const overview = (await (await fetch(`${origin}${BASE}/api/overview`)).json()) as {
      capabilities: { readOnly: boolean; rerun: boolean };
      inbox: unknown[];
    };
    expect(overview.capabilities).toMatchObject({ readOnly: true, rerun: false });
    expect(overview.inbox).toHaveLength(1);
    for (const action of ['decide', 'cancel', 'rerun', 'signal']) {
      const res = await post(
        origin,
        { action, runId: parked.runId, approved: true, name: 'x' },
        { cookie, 'x-chainkit-csrf': token },
      );
      expect(res.status).toBe(403);
    }
    expect(calls.pay).toBe(0);
    expect((await runner.getRun(parked.runId))?.status).toBe('awaiting_confirmation');
  });

  it('sends a strict CSP (no inline script, nothing from elsewhere) on every response, and loads nothing from another origin', async () => {
    const { origin } = await mount({ authorize: (req) => !req.url.includes('deny') });
    expect(CSP).toContain("script-src 'self'");
    expect(CSP).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    for (const p of ['/', '/app.js', '/app.css', '/api/overview', '/api/run?id=none', '/missing', '/?deny=1']) {
      const res = await fetch(`${origin}${BASE}${p}`);
      expect(res.headers.get('content-security-policy'), p).toBe(CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      await res.body?.cancel();
    }
    const { html } = await session(origin, BASE);
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=|https?:\/\//i);
    expect([...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])).toEqual([
      `${BASE}/app.css`,
      `${BASE}/app.js`,
      '#main',
      '#/',
    ]);
  });

  it('never sends a secret: every response about runs whose input, context and tool errors carry them', async () => {
    const { origin, runner, calls } = await mount();
    const parked = await runner.run(gated, INPUT, { context: CONTEXT });
    if (parked.status !== 'awaiting_confirmation') throw new Error('expected a parked run');
    const failed = await runner.run(failing, INPUT, { context: CONTEXT });
    expect(failed.status).toBe('failed');
    expect(JSON.stringify(failed)).toContain('[REDACTED]'); // the secrets were there to hide
    const { cookie, token } = await session(origin, BASE);
    const bodies: string[] = [];
    const keep = async (res: Response, stream = false) => {
      bodies.push([...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n'));
      bodies.push(stream ? await readStream(res) : await res.text());
    };
    for (const p of [
      '/',
      '/app.js',
      '/app.css',
      '/api/overview',
      `/api/overview?status=failed`,
      `/api/run?id=${parked.runId}`,
      `/api/run?id=${failed.runId}`,
    ])
      await keep(await fetch(`${origin}${BASE}${p}`));
    await keep(await fetch(`${origin}${BASE}/api/events?id=${encodeURIComponent(failed.runId)}`), true);
    await keep(await fetch(`${origin}${BASE}/api/events?id=${encodeURIComponent(parked.runId)}`), true);
    const live = fetch(`${origin}${BASE}/api/live`);
    calls.explodeFails = false;
    await keep(await post(origin, { action: 'rerun', runId: failed.runId }, { cookie, 'x-chainkit-csrf': token }));
    await keep(
      await post(
        origin,
        { action: 'decide', runId: parked.runId, approved: true },
        { cookie, 'x-chainkit-csrf': token },
      ),
    );
    await keep(await live, true);
    for (const p of [`/api/run?id=${parked.runId}`, `/api/run?id=${encodeURIComponent(`${failed.runId}~rerun1`)}`])
      await keep(await fetch(`${origin}${BASE}${p}`));
    const all = bodies.join('\n');
    expect(all).toContain(parked.runId);
    expect(all).toContain('event: step:end');
    expect(all).toContain('[REDACTED]');
    for (const secret of [...SECRETS, parked.resumeToken]) expect(all).not.toContain(secret);
  });

  it("streams a run's events and tells open pages that runs changed", async () => {
    const { origin, runner } = await mount();
    const liveRes = await fetch(`${origin}${BASE}/api/live`);
    expect(liveRes.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reading = readStream(liveRes, 1_500);
    await new Promise((r) => setTimeout(r, 100));
    const r = await runner.run(gated, INPUT, { context: CONTEXT });
    expect(await reading).toContain('event: changed');
    const events = await readStream(await fetch(`${origin}${BASE}/api/events?id=${r.runId}`));
    expect(events).toMatch(/event: run:start[\s\S]*event: step:end[\s\S]*event: run:end/);
  });

  it('leaves requests outside basePath to the app (404 in plain node:http)', async () => {
    const { origin } = await mount();
    expect((await fetch(`${origin}/elsewhere`)).status).toBe(404);
    expect((await fetch(`${origin}/ops/chainsX`)).status).toBe(404);
  });
});

describe('the page assets', () => {
  it('are built from src/inspector/page (assets.ts is up to date) and stay under 60 kB gzipped', async () => {
    execFileSync(process.execPath, ['scripts/build-inspector.mjs', '--check', '--silent'], { stdio: 'pipe' });
    const { gzipSync } = await import('node:zlib');
    const { APP_CSS, APP_JS } = await import('../../src/inspector/assets.js');
    const { pageHtml } = await import('../../src/inspector/page.js');
    expect(gzipSync(APP_JS).length + gzipSync(APP_CSS).length + gzipSync(pageHtml(BASE, 'x')).length).toBeLessThan(
      60_000,
    );
  });
});

describe('the run view', () => {
  it('keeps what else a trace entry holds (sub-chains, forEach items), redacted, and never a resume token or raw output', async () => {
    const { runView, safeWith } = await import('../../src/inspector/views.js');
    const step = {
      stepNumber: 1,
      id: 'each',
      status: 'success',
      attempts: 1,
      latencyMs: 3,
      startedAt: new Date(0).toISOString(),
      items: [{ index: 0, status: 'success', input: { apiKey: 'k-123456' } }],
    };
    const info = {
      runId: 'r~rerun2',
      chain: 'c',
      status: 'awaiting_confirmation' as const,
      owner: 'o',
      leaseUntil: 0,
      steps: ['each'],
      result: {
        status: 'awaiting_confirmation',
        resumeToken: 'TOKEN-SECRET-1',
        confirmation: { step: 's', tool: 't', prompt: 'ok? password=pw-1', expiresAt: 'x' },
        runId: 'r~rerun2',
        chain: 'c',
        trace: {
          traceId: 't',
          runId: 'r~rerun2',
          chain: 'c',
          startedAt: 'a',
          endedAt: 'b',
          totalLatencyMs: 3,
          status: 'awaiting_confirmation',
          steps: [step],
        },
        metadata: {},
      },
    };
    const view = runView(info as never, safeWith(undefined));
    expect(view.rerunOf).toBe('r~rerun1');
    expect(view.steps[0]!.extra).toEqual({ items: [{ index: 0, status: 'success', input: { apiKey: '[REDACTED]' } }] });
    expect(view.awaiting!.prompt).toBe('ok? password=[REDACTED]');
    expect(JSON.stringify(view)).not.toMatch(/TOKEN-SECRET-1|pw-1|k-123456/);
  });
  it('shows the steps of chains a step ran (forEach items, their steps) as children, redacted', async () => {
    const { runView, safeWith } = await import('../../src/inspector/views.js');
    const { chain, createRunner, defineTool, functionInvoker, memoryRunStore } = await import('../../src/index.js');
    const { z } = await import('zod');
    const list = defineTool({
      name: 'list_ids',
      description: 'l',
      effect: 'read',
      input: z.object({}),
      output: z.object({ ids: z.array(z.string()) }),
    });
    const mark = defineTool({
      name: 'mark',
      description: 'm',
      effect: 'read',
      input: z.object({ id: z.string(), apiKey: z.string() }),
      output: z.object({ ok: z.boolean() }),
    });
    const markOne = chain('mark_one', { input: z.object({ id: z.string() }) })
      .tool('mark', mark, (ref) => ({ id: ref('input', 'id'), apiKey: 'k-987654' }))
      .build();
    const all = chain('mark_all', { input: z.object({}) })
      .tool('list', list, () => ({}))
      .forEach('marked', (ref) => ({ over: ref('list', 'ids'), chain: markOne, input: (item) => ({ id: item() }) }))
      .build();
    const runner = createRunner({
      invoker: functionInvoker([list, mark], {
        list_ids: async () => ({ ids: ['a', 'b'] }),
        mark: async () => ({ ok: true }),
      }),
      stores: { runs: memoryRunStore() },
    });
    cleanups.push(() => runner.close());
    expect((await runner.run(all, {}, { runId: 'fe-view' })).status).toBe('completed');
    const view = runView((await runner.getRun('fe-view'))!, safeWith(undefined));
    const marked = view.steps.find((st) => st.id === 'marked')!;
    const flat = (steps: typeof view.steps): string[] => steps.flatMap((st) => [st.id, ...flat(st.children ?? [])]);
    expect(flat(marked.children ?? [])).toEqual(expect.arrayContaining(['marked/0/mark', 'marked/1/mark']));
    expect(JSON.stringify(view)).not.toContain('k-987654');
  });
});
