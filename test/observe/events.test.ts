import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  findAndDelete,
  findAndUpdate,
  redact,
  taskTools,
  type HookErrorEvent,
  type Logger,
  type ToolTransition,
} from 'chainkit';
import { createMockInvoker, createTaskStore, fixtures } from 'chainkit/testing';

const alice = { context: { userId: fixtures.alice } };

describe('events and hooks', () => {
  it('emits the run lifecycle in order', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const seen: string[] = [];
    for (const name of ['chain:start', 'chain:end', 'step:start', 'step:end'] as const) {
      runner.events.on(name, ((e: { step?: string }) => seen.push(`${name}${e.step ? `:${e.step}` : ''}`)) as never);
    }
    await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, alice);
    expect(seen).toEqual([
      'chain:start',
      'step:start:find',
      'step:end:find',
      'step:start:target',
      'step:end:target',
      'step:start:update',
      'step:end:update',
      'chain:end',
    ]);
  });

  it('emits tool transitions within a session, across runs and invokes', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    const transitions: ToolTransition[] = [];
    runner.events.on('tool:transition', (t) => transitions.push(t));
    await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 4pm' }, { ...alice, sessionId: 's2' });
    await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' }, { sessionId: 's2' });
    await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' }, { sessionId: 'other' });
    expect(transitions.map((t) => `${t.fromTool}->${t.toTool}:${t.success}`)).toEqual([
      'list_tasks->update_task:true',
      'update_task->list_tasks:true',
    ]);
    expect(transitions[0]).toMatchObject({ sessionId: 's2', gapMs: expect.any(Number), timestamp: expect.any(Number) });
  });

  it('a run without a session is its own session, also across its gate', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools] });
    const transitions: ToolTransition[] = [];
    runner.events.on('tool:transition', (t) => transitions.push(t));
    const updated = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 4pm' }, alice);
    const gated = await runner.run(findAndDelete, { match: 'groceries' }, alice);
    if (gated.status !== 'awaiting_confirmation') throw new Error(gated.status);
    expect(gated.metadata.suggestions.relevantChains.map((c) => c.chain)).toContain(findAndDelete.name); // from the tools this run used
    const deleted = await runner.resume(gated.resumeToken, { approved: true }, alice);
    expect(deleted.status).toBe('completed');
    expect(
      transitions.map(
        (t) =>
          `${t.sessionId === updated.runId ? 'updated' : t.sessionId === gated.runId ? 'gated' : t.sessionId}:${t.fromTool}->${t.toTool}`,
      ),
    ).toEqual([
      'updated:list_tasks->update_task',
      'gated:list_tasks->delete_task', // the resume continues from the call before the gate
    ]);
  });

  it('a throwing or rejecting hook never changes the outcome, and is reported', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const errors: HookErrorEvent[] = [];
    const runner = createRunner({
      invoker: store.invoker,
      hooks: {
        onStepStart: () => {
          throw new Error('sync hook bug');
        },
        onStepEnd: async () => {
          throw new Error('async hook bug');
        },
        onChainEnd: () => Promise.reject('rejected'),
        onHookError: (e) => {
          errors.push(e);
        },
      },
    });
    const r = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, alice);
    await new Promise((res) => setTimeout(res, 5));
    expect(r.status).toBe('completed');
    expect(errors.map((e) => e.event)).toEqual(expect.arrayContaining(['step:start', 'step:end', 'chain:end']));
    expect(errors.length).toBe(3 + 3 + 1);
  });

  it('a throwing event listener does not break the run either', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const reported = vi.fn();
    runner.events.on('step:end', () => {
      throw new Error('listener bug');
    });
    runner.events.on('hook:error', reported);
    const r = await runner.run(findAndUpdate, { match: 'dentist', title: 'x' }, alice);
    expect(r.status).toBe('completed');
    expect(reported).toHaveBeenCalledTimes(3);
  });
});

describe('traces and redaction', () => {
  const login = defineTool({
    name: 'login',
    description: 'l',
    input: z.object({ user: z.string(), password: z.string(), headers: z.object({ Authorization: z.string() }) }),
    output: z.object({ token: z.string(), profile: z.object({ name: z.string(), apiKey: z.string() }) }),
    effect: 'read',
  });
  const chain = defineChain({
    name: 'login_chain',
    input: z.object({}),
    steps: [
      { id: 'l', tool: login, input: { user: 'ann', password: 'hunter2', headers: { Authorization: 'Bearer abc' } } },
    ],
  });
  const invoker = createMockInvoker({
    login: { ok: { token: 'tok-123', profile: { name: 'Ann', apiKey: 'sk-999' } } },
  });

  it('keeps no inputs/outputs in summary traces', async () => {
    const r = await createRunner({ invoker }).run(chain, {});
    expect(r.trace.steps[0]).not.toHaveProperty('input');
    expect(r.trace.steps[0]).not.toHaveProperty('output');
  });

  it('redacts secrets in full traces, and the caller-supplied rule too', async () => {
    const r = await createRunner({ invoker, traceDetail: 'full', redact: (key) => key === 'name' }).run(
      chain,
      {},
      { sessionId: 'secret-session' },
    );
    const text = JSON.stringify(r.trace);
    for (const secret of ['hunter2', 'Bearer abc', 'tok-123', 'sk-999', 'Ann']) expect(text).not.toContain(secret);
    expect(r.trace.steps[0]!.input).toEqual({
      user: '[REDACTED]',
      password: '[REDACTED]',
      headers: { Authorization: '[REDACTED]' },
    }); // identity too, unless traceIdentity
    expect(r.trace.sessionId).toBe('secret-session'); // the trace's own fields are never redacted
    // The result itself is the real output.
    expect(r.status === 'completed' && r.output).toMatchObject({ token: 'tok-123' });
  });

  it('full traces hide credentials by key segment but keep look-alikes such as max_tokens and passenger', async () => {
    const ask = defineTool({
      name: 'ask',
      description: 'a',
      effect: 'read',
      input: z.object({
        max_tokens: z.number(),
        passenger: z.string(),
        privateKey: z.string(),
        session_token: z.string(),
        sessionId: z.string(),
      }),
      output: z.object({ tokens_used: z.number(), jwt: z.string(), dsn: z.string() }),
    });
    const chain = defineChain({
      name: 'ask_chain',
      input: z.object({}),
      steps: [
        {
          id: 'a',
          tool: ask,
          input: { max_tokens: 100, passenger: 'Ann', privateKey: 'pk-1', session_token: 'st-1', sessionId: 'conv-7' },
        },
      ],
    });
    const r = await createRunner({
      invoker: createMockInvoker({ ask: { ok: { tokens_used: 42, jwt: 'eyJ.x.y', dsn: 'https://k@sentry.io/1' } } }),
      traceDetail: 'full',
    }).run(chain, {});
    expect(r.trace.steps[0]!.input).toEqual({
      max_tokens: 100,
      passenger: 'Ann',
      privateKey: '[REDACTED]',
      session_token: '[REDACTED]',
      sessionId: 'conv-7',
    });
    expect(r.trace.steps[0]!.output).toEqual({ tokens_used: 42, jwt: '[REDACTED]', dsn: '[REDACTED]' });
  });

  it('redact() handles cycles and leaves the original untouched', () => {
    const o: Record<string, unknown> = { a: 1, secret: 's' };
    o.self = o;
    expect(redact(o)).toEqual({ a: 1, secret: '[REDACTED]', self: '[Circular]' });
    expect(o.secret).toBe('s');
  });

  it('logs at the expected levels with run identifiers', async () => {
    const lines: [string, Record<string, unknown>, string | undefined][] = [];
    const logger: Logger = {
      debug: (o, m) => lines.push(['debug', o as Record<string, unknown>, m]),
      info: (o, m) => lines.push(['info', o as Record<string, unknown>, m]),
      warn: (o, m) => lines.push(['warn', o as Record<string, unknown>, m]),
      error: (o, m) => lines.push(['error', o as Record<string, unknown>, m]),
    };
    const flaky = createMockInvoker({
      login: [
        { error: Object.assign(new Error('x'), { status: 503 }) },
        { ok: { token: 't', profile: { name: 'n', apiKey: 'k' } } },
      ],
    });
    const runner = createRunner({
      invoker: flaky,
      logger,
      random: () => 0,
      retry: { unavailable: { retries: 1, minDelayMs: 1, factor: 1, maxDelayMs: 1 } },
    });
    await runner.run(chain, {});
    const levels = lines.map((l) => l[0]);
    expect(levels).toEqual(['info', 'warn', 'debug', 'info']);
    expect(
      lines.every(([, o]) => typeof o.runId === 'string' && typeof o.traceId === 'string' && o.chain === 'login_chain'),
    ).toBe(true);
    expect(JSON.stringify(lines)).not.toContain('hunter2');
    const bad = createRunner({
      invoker: createMockInvoker({ login: { error: Object.assign(new Error('no'), { status: 403 }) } }),
      logger,
    });
    lines.length = 0;
    await bad.run(chain, {});
    expect(lines.at(-1)![0]).toBe('error');
    expect(lines.at(-1)![1]).toMatchObject({ step: 'l', category: 'permission_denied' });
  });
});

describe("callers' functions that throw", () => {
  it('a throwing logger or redact rule neither breaks nor hangs a run', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const boom = () => {
      throw new Error('logger down');
    };
    const runner = createRunner({
      invoker: store.invoker,
      traceDetail: 'full',
      logger: { debug: boom, info: boom, warn: boom, error: boom },
      redact: (key) => {
        if (key === 'title') throw new Error('rule bug');
        return false;
      },
    });
    const r = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, alice);
    expect(r.status).toBe('completed');
    expect(JSON.stringify(r.trace)).not.toContain('Dentist 3pm'); // the broken rule hid it
  });
});
