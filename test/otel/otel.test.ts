import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createRunner, findAndDelete, findAndUpdate, taskTools } from 'chainkit';
import { OTEL_ATTRIBUTES as A, otelHooks } from 'chainkit/otel';
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
  if (!span) throw new Error(`no span ${name} in ${exporter.getFinishedSpans().map((s) => s.name).join(', ')}`);
  return span;
};

describe('otelHooks', () => {
  it('makes a span per run and per step, children of the caller\'s span, with retries as events', async () => {
    const store = createTaskStore({ users: fixtures.users });
    store.failNext('list_tasks', { throw: Object.assign(new Error('upstream flaked'), { status: 503 }) });
    const runner = createRunner({ invoker: store.invoker, hooks: otelHooks({ tracer }), retry: fast, random: () => 0 });
    const request = tracer.startSpan('POST /assistant');
    const result = await context.with(trace.setSpan(context.active(), request), () =>
      runner.run(findAndUpdate, { match: 'dentist', title: 'Dentist 3pm' }, { ...alice, sessionId: 's1' }));
    request.end();
    await runner.close();
    expect(result.status).toBe('completed');

    const run = byName('chain find_and_update');
    expect(run.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(run.attributes).toMatchObject({ [A.chain]: 'find_and_update', [A.runId]: result.runId, [A.sessionId]: 's1', [A.status]: 'completed', [A.resumed]: false });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);

    const steps = exporter.getFinishedSpans().filter((s) => s.name.startsWith('step '));
    expect(steps.map((s) => s.name).sort()).toEqual(['step find', 'step target', 'step update']);
    for (const s of steps) expect(s.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    const find = byName('step find');
    expect(find.attributes).toMatchObject({ [A.chain]: 'find_and_update', [A.step]: 'find', [A.tool]: 'list_tasks', [A.attempt]: 2, [A.cached]: false, [A.status]: 'success' });
    expect(find.events.map((e) => [e.name, e.attributes?.[A.attempt], e.attributes?.[A.category]])).toEqual([['retry', 1, 'unavailable']]);
    expect(byName('step target').attributes[A.tool]).toBeUndefined();
  });

  it('records a failed step and run as errors with category and code', async () => {
    const store = createTaskStore({ users: fixtures.users });
    store.failNext('list_tasks', { status: 'error', error: 'permission_denied', message: 'not yours' });
    const runner = createRunner({ invoker: store.invoker, hooks: otelHooks({ tracer }) });
    const result = await runner.run(findAndUpdate, { match: 'dentist', title: 'x' }, alice);
    await runner.close();
    expect(result.status).toBe('failed');
    for (const name of ['step find', 'chain find_and_update']) {
      const span = byName(name);
      expect(span.status.code).toBe(SpanStatusCode.ERROR);
      expect(span.attributes).toMatchObject({ [A.category]: 'permission_denied', [A.code]: 'permission_denied', [A.status]: name === 'step find' ? 'error' : 'failed' });
      expect(span.events.find((e) => e.name === 'exception')?.attributes).toMatchObject({ 'exception.type': 'permission_denied' });
    }
    expect(byName('step find').attributes[A.attempt]).toBe(1);
  });

  it('marks an idempotent replay as cached, spans a refused run, and spans runner.invoke calls', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], hooks: otelHooks({ tracer }) });
    const input = { user_id: fixtures.alice, title: 'Buy stamps' };
    await runner.invoke('add_task', input, { idempotencyKey: 'k1' });
    await runner.invoke('add_task', input, { idempotencyKey: 'k1' });
    const tools = exporter.getFinishedSpans().filter((s) => s.name === 'tool add_task');
    expect(tools.map((s) => s.attributes[A.cached])).toEqual([false, true]);
    expect(tools[0]!.parentSpanContext).toBeUndefined();

    exporter.reset();
    const refused = await runner.run(findAndDelete, { match: '' }, alice);
    expect(refused.status).toBe('failed');
    const span = byName('chain find_and_delete');
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
    const runs = exporter.getFinishedSpans().filter((s) => s.name === 'chain find_and_delete');
    expect(runs.map((s) => [s.attributes[A.status], s.attributes[A.resumed]])).toEqual([['awaiting_confirmation', false], ['completed', true]]);
    const deletes = exporter.getFinishedSpans().filter((s) => s.name === 'step delete');
    expect(deletes.map((s) => s.attributes[A.status])).toEqual(['awaiting_confirmation', 'success']);
    expect(deletes.map((s) => s.parentSpanContext?.spanId)).toEqual(runs.map((s) => s.spanContext().spanId));
  });
});
