// §12: traces, events, Mermaid and OpenTelemetry spans nest sub-chains under the step that ran them.
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, formatTrace, functionInvoker, toMermaid } from 'chainkit';
import { otelHooks } from 'chainkit/otel';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => void context.setGlobalContextManager(contextManager.enable()));
afterAll(() => {
  context.disable();
  return provider.shutdown();
});

const get = defineTool({
  name: 'get',
  description: 'g',
  input: z.object({ id: z.string() }),
  output: z.object({ id: z.string() }),
  effect: 'read',
});
const list = defineTool({
  name: 'list',
  description: 'l',
  input: z.object({}),
  output: z.object({ ids: z.array(z.string()) }),
  effect: 'read',
});
const one = chain('one', { input: z.object({ id: z.string() }) })
  .tool('get', get, (ref) => ({ id: ref('input', 'id') }))
  .build();
const many = chain('many', { input: z.object({}) })
  .tool('list', list, () => ({}))
  .forEach('each', (ref) => ({
    over: ref('list', 'ids'),
    chain: one,
    input: (item) => ({ id: item() }),
    concurrency: 2,
  }))
  .chain('again', one, () => ({ id: 'z' }))
  .build();
const invoker = functionInvoker([get, list], { get: ({ id }) => ({ id }), list: () => ({ ids: ['a', 'b', 'c'] }) });

describe('nesting', () => {
  it('OTel: a sub-chain step span is a child of the span of the step that ran it', async () => {
    exporter.reset();
    const runner = createRunner({ invoker, hooks: otelHooks({ tracer: provider.getTracer('flow') }) });
    const r = await runner.run(many, {});
    expect(r.status).toBe('completed');
    const spans = exporter.getFinishedSpans();
    const byStep = (step: string) => spans.find((s) => s.attributes['chainkit.step'] === step)!;
    const parentId = (s: ReturnType<typeof byStep>) => s.parentSpanContext?.spanId;
    expect(parentId(byStep('each/1/get'))).toBe(byStep('each').spanContext().spanId);
    expect(parentId(byStep('again/get'))).toBe(byStep('again').spanContext().spanId);
    const run = spans.find((s) => s.name === 'invoke_workflow many')!;
    expect(parentId(byStep('each'))).toBe(run.spanContext().spanId);
    await runner.close();
  });

  it('formatTrace indents nested entries and cuts long lists; toMermaid draws a subgraph per sub-chain', async () => {
    const runner = createRunner({ invoker });
    const r = await runner.run(many, {});
    const text = formatTrace(r.trace, { maxChildren: 2 });
    expect(text).toMatch(/\n\s+\d+ {3}each\/0 /);
    expect(text).toMatch(/\n\s+\d+ {5}each\/0\/get +get /);
    expect(text).toContain('… 1 more');
    const mermaid = toMermaid(many);
    expect(mermaid).toContain('subgraph each__0["one"]');
    expect(mermaid).toContain('each -.-> each__0');
    expect(mermaid).toContain('each<br/>forEach: one');
    await runner.close();
  });

  it('toMermaid draws sub-chains at every depth, and steps named start or end do not clash with its own nodes', () => {
    const leaf = chain('leaf', { input: z.object({}) })
      .compute('x', () => 1)
      .build();
    const mid = chain('mid', { input: z.object({}) })
      .chain('inner', leaf, () => ({}))
      .build();
    const top = chain('top', { input: z.object({}) })
      .compute('start', () => 1)
      .chain('end', mid, () => ({}))
      .build();
    const lines = toMermaid(top).split('\n');
    expect(lines).toContain('    subgraph end__0_inner__0["leaf"]'); // the second level was missing
    expect(lines).toContain('      end__0_inner__0_x["x<br/>compute"]');
    expect(lines).toContain('  start_ --> start'); // the chain's start node and the step named start
    // `end` alone closes a subgraph in Mermaid: no node or edge is named so.
    expect(lines.filter((l) => /(^|\s)end(\{|\[|\s-)/.test(l))).toEqual([]);
  });
});
