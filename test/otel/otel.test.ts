import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineTool,
  findAndDelete,
  findAndUpdate,
  functionInvoker,
  httpInvoker,
  taskTools,
} from 'chainkit';
import { GENAI_ATTRIBUTES as G, OTEL_ATTRIBUTES as A, otelHooks } from 'chainkit/otel';
import { createTaskStore, fixtures } from 'chainkit/testing';

// The real OpenTelemetry SDK with its in-memory exporter; an async-hooks context manager so a
// caller's active span is seen across awaits, as in a real service.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer('chainkit-test');
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(() => {
  context.disable();
  return provider.shutdown();
});
beforeEach(() => exporter.reset());

const alice = { context: { userId: fixtures.alice } };
const fast = { unavailable: { retries: 2, minDelayMs: 1, factor: 1, maxDelayMs: 1 } };
const byName = (name: string): ReadableSpan => {
  const span = exporter.getFinishedSpans().find((s) => s.name === name);
  if (!span)
    throw new Error(
      `no span ${name} in ${exporter
        .getFinishedSpans()
        .map((s) => s.name)
        .join(', ')}`,
    );
  return span;
};

describe('otelHooks', () => {
  it("makes a span per run and per step, children of the caller's span, with retries as events", async () => {
    const store = createTaskStore({ users: fixtures.users });
    store.failNext('list_tasks', { throw: Object.assign(new Error('upstream flaked'), { status: 503 }) });
    const runner = createRunner({ invoker: store.invoker, hooks: otelHooks({ tracer }), retry: fast, random: () => 0 });
    const request = tracer.startSpan('POST /assistant');
    const result = await context.with(trace.setSpan(context.active(), request), () =>
      runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, { ...alice, sessionId: 's1' }),
    );
    request.end();
    await runner.close();
    expect(result.status).toBe('completed');

    const run = byName('invoke_workflow find_and_update');
    expect(run.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(run.attributes).toMatchObject({
      [A.chain]: 'find_and_update',
      [A.runId]: result.runId,
      [A.sessionId]: 's1',
      [A.status]: 'completed',
      [A.resumed]: false,
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);

    const steps = exporter
      .getFinishedSpans()
      .filter((s) => s !== run && s.parentSpanContext?.spanId === run.spanContext().spanId);
    expect(steps.map((s) => s.name).sort()).toEqual([
      'execute_tool list_tasks',
      'execute_tool update_task',
      'step target',
    ]);
    for (const s of steps) expect(s.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    const find = byName('execute_tool list_tasks');
    expect(find.attributes).toMatchObject({
      [A.chain]: 'find_and_update',
      [A.step]: 'find',
      [A.tool]: 'list_tasks',
      [A.attempt]: 2,
      [A.cached]: false,
      [A.status]: 'success',
    });
    expect(
      find.events.filter((e) => e.name === 'retry').map((e) => [e.attributes?.[A.attempt], e.attributes?.[A.category]]),
    ).toEqual([[1, 'unavailable']]);
    expect(find.events.filter((e) => e.name === 'exception').map((e) => e.attributes?.['exception.message'])).toEqual([
      'upstream flaked',
    ]);
    expect(byName('step target').attributes[A.tool]).toBeUndefined();
  });

  it('records a failed step and run as errors with category and code', async () => {
    const store = createTaskStore({ users: fixtures.users });
    store.failNext('list_tasks', { status: 'error', error: 'permission_denied', message: 'not yours' });
    const runner = createRunner({ invoker: store.invoker, hooks: otelHooks({ tracer }) });
    const result = await runner.run(findAndUpdate, { match: 'dentist', title: 'x' }, alice);
    await runner.close();
    expect(result.status).toBe('failed');
    for (const name of ['execute_tool list_tasks', 'invoke_workflow find_and_update']) {
      const span = byName(name);
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
      expect(span.attributes).toMatchObject({
        [A.category]: 'permission_denied',
        [A.code]: 'permission_denied',
        [A.status]: name === 'execute_tool list_tasks' ? 'error' : 'failed',
        'error.type': 'permission_denied',
      });
      expect(span.events.find((e) => e.name === 'exception')?.attributes).toMatchObject({
        'exception.type': 'permission_denied',
      });
    }
    expect(byName('execute_tool list_tasks').attributes[A.attempt]).toBe(1);
  });

  it('marks an idempotent replay as cached, spans a refused run, and spans runner.invoke calls', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], hooks: otelHooks({ tracer }) });
    const input = { user_id: fixtures.alice, title: 'Buy stamps' };
    await runner.invoke('add_task', input, { idempotencyKey: 'k1' });
    await runner.invoke('add_task', input, { idempotencyKey: 'k1' });
    const tools = exporter.getFinishedSpans().filter((s) => s.name === 'execute_tool add_task');
    expect(tools.map((s) => s.attributes[A.cached])).toEqual([false, true]);
    expect(tools[0]!.parentSpanContext).toBeUndefined();

    exporter.reset();
    const refused = await runner.run(findAndDelete, { match: '' }, alice);
    expect(refused.status).toBe('failed');
    const span = byName('invoke_workflow find_and_delete');
    expect(span.attributes).toMatchObject({ [A.status]: 'failed', [A.category]: 'invalid_input' });
    await runner.close();
  });

  it('a gate ends the run span as awaiting_confirmation and the resume gets a span of its own', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, hooks: otelHooks({ tracer }) });
    const first = await runner.run(findAndDelete, { match: 'dentist' }, alice);
    if (first.status !== 'awaiting_confirmation') throw new Error(first.status);
    const resumed = await runner.resume(first.resumeToken, { approved: true }, alice);
    await runner.close();
    expect(resumed.status).toBe('completed');
    const runs = exporter.getFinishedSpans().filter((s) => s.name === 'invoke_workflow find_and_delete');
    expect(runs.map((s) => [s.attributes[A.status], s.attributes[A.resumed]])).toEqual([
      ['awaiting_confirmation', false],
      ['completed', true],
    ]);
    const deletes = exporter.getFinishedSpans().filter((s) => s.name === 'execute_tool delete_task');
    expect(deletes.map((s) => s.attributes[A.status])).toEqual(['awaiting_confirmation', 'success']);
    expect(deletes.map((s) => s.parentSpanContext?.spanId)).toEqual(runs.map((s) => s.spanContext().spanId));
  });

  describe('GenAI conventions and nesting', () => {
    // A real HTTP tool service: the task store behind node:http, answering POST /tools/{name}.
    let server: Server;
    let baseUrl = '';
    let flaky = 0;
    const store = createTaskStore({ users: fixtures.users });
    beforeAll(async () => {
      server = createServer((req, res) => {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString()));
        req.on('end', () => {
          const tool = req.url!.slice('/tools/'.length);
          if (flaky > 0) {
            flaky--;
            res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"warming up"}');
            return;
          }
          store
            .invoker({
              tool,
              input: JSON.parse(body),
              attempt: 1,
              signal: new AbortController().signal,
              runId: 'r',
              traceId: 't',
              context: {},
              progress: () => undefined,
            })
            .then(
              (out) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(out)),
              () => res.writeHead(500).end(),
            );
        });
      });
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(() => new Promise<void>((done) => server.close(() => done())));

    // The app's instrumented fetch: each request is a client span in the active context.
    const tracedFetch: typeof fetch = (url, init) =>
      tracer.startActiveSpan('HTTP POST', async (span) => {
        try {
          return await fetch(url, init);
        } finally {
          span.end();
        }
      });

    it('nests spans the tool starts (its HTTP requests) under execute_tool, one per attempt, with GenAI attributes', async () => {
      flaky = 1;
      const runner = createRunner({
        invoker: httpInvoker({ baseUrl, fetch: tracedFetch }),
        hooks: otelHooks({ tracer }),
        retry: fast,
        random: () => 0,
      });
      const result = await runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, alice);
      await runner.close();
      expect(result.status).toBe('completed');

      const run = byName('invoke_workflow find_and_update');
      expect(run.attributes).toMatchObject({ [G.operation]: 'invoke_workflow', [A.chain]: 'find_and_update' });
      const list = byName('execute_tool list_tasks');
      expect(list.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
      expect(list.attributes).toMatchObject({
        [G.operation]: 'execute_tool',
        [G.toolName]: 'list_tasks',
        [G.toolCallId]: `${result.runId}:find`,
        [A.step]: 'find',
        [A.attempt]: 2,
      });
      const update = byName('execute_tool update_task');
      expect(update.attributes).toMatchObject({
        [G.toolName]: 'update_task',
        [G.toolCallId]: `${result.runId}:update`,
      });

      const http = exporter.getFinishedSpans().filter((s) => s.name === 'HTTP POST');
      expect(http.map((s) => s.parentSpanContext?.spanId)).toEqual([
        list.spanContext().spanId,
        list.spanContext().spanId,
        update.spanContext().spanId,
      ]);
      for (const s of http) expect(s.spanContext().traceId).toBe(run.spanContext().traceId);
      // The failed first attempt is recorded on the tool span as the HTTP error the invoker threw.
      expect(list.events.filter((e) => e.name === 'exception').map((e) => e.attributes?.['exception.type'])).toEqual([
        'HttpToolError',
      ]);
      expect(list.status.code).toBe(SpanStatusCode.UNSET);
    });

    it("nests a runner.invoke call's HTTP span under its execute_tool span", async () => {
      const runner = createRunner({
        invoker: httpInvoker({ baseUrl, fetch: tracedFetch }),
        tools: [...taskTools],
        hooks: otelHooks({ tracer }),
      });
      const r = await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' });
      await runner.close();
      expect(r.status).toBe('completed');
      const tool = byName('execute_tool list_tasks');
      expect(tool.attributes).toMatchObject({
        [G.operation]: 'execute_tool',
        [G.toolName]: 'list_tasks',
        [G.toolCallId]: `${r.trace.runId}:list_tasks`,
      });
      expect(byName('HTTP POST').parentSpanContext?.spanId).toBe(tool.spanContext().spanId);
    });
  });

  it('records the original error, keeps it as a non-enumerable cause, and logs it as { err }', async () => {
    const original = new TypeError('db driver exploded');
    const invoker = functionInvoker({
      list_tasks: () => {
        throw original;
      },
      update_task: () => ({}),
    });
    const logger = { debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn() };
    const runner = createRunner({
      invoker,
      tools: [...taskTools],
      hooks: otelHooks({ tracer }),
      logger,
      retry: { unknown: { retries: 0 } },
    });
    const result = await runner.run(findAndUpdate, { match: 'dentist', title: 'x' }, alice);
    expect(result.status).toBe('failed');
    if (result.status !== 'failed') return;
    expect(result.error.cause).toBe(original);
    expect(Object.keys(result.error)).not.toContain('cause');
    expect(JSON.parse(JSON.stringify(result.error))).not.toHaveProperty('cause');
    expect(result.trace.steps[0]!.error!.cause).toBe(original);
    // The log gets the error's type, message and stack (masked like every text that leaves), not the object itself.
    expect(logger.error).toHaveBeenCalledWith(
      expect.objectContaining({
        err: expect.objectContaining({
          name: 'TypeError',
          message: 'db driver exploded',
          stack: expect.stringContaining('otel.test.ts'),
        }),
        runId: result.runId,
        code: result.error.code,
      }),
      expect.any(String),
    );

    for (const name of ['execute_tool list_tasks', 'invoke_workflow find_and_update']) {
      const span = byName(name);
      const exceptions = span.events.filter((e) => e.name === 'exception');
      expect(exceptions.map((e) => e.attributes?.['exception.type'])).toEqual(['TypeError']);
      expect(exceptions[0]!.attributes?.['exception.message']).toContain('db driver exploded');
      expect(exceptions[0]!.attributes?.['exception.stacktrace']).toContain('otel.test.ts');
      expect(span.attributes[G.errorType]).toBe(result.error.code);
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
    }

    const direct = await runner.invoke('list_tasks', { user_id: fixtures.alice, status: 'all' });
    await runner.close();
    expect(direct.status === 'failed' && direct.error.cause).toBe(original);
  });

  it('masks secret values of the call in the recorded exception', async () => {
    const login = defineTool({
      name: 'login',
      description: 'Log in',
      input: z.object({ api_key: z.string() }),
      output: z.object({}),
      effect: 'read',
    });
    const invoker = functionInvoker({
      login: (input: { api_key: string }) => {
        throw new Error(`key ${input.api_key} was refused`);
      },
    });
    const runner = createRunner({
      invoker,
      tools: [login],
      hooks: otelHooks({ tracer }),
      retry: { unknown: { retries: 0 } },
    });
    const r = await runner.invoke('login', { api_key: 'sk-live-0123456789' });
    await runner.close();
    expect(r.status === 'failed' && (r.error.cause as Error).message).toBe('key sk-live-0123456789 was refused'); // in-process only
    const exceptions = byName('execute_tool login').events.filter((e) => e.name === 'exception');
    expect(exceptions).toHaveLength(1);
    const text = JSON.stringify(exceptions[0]!.attributes);
    expect(text).toContain('was refused');
    expect(text).not.toContain('sk-live-0123456789');
  });
});
