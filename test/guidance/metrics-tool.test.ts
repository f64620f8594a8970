import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, metricsTool } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';

const io = { input: z.object({ q: z.string() }), output: z.object({ ok: z.boolean() }) };
const [find, open, close] = ['find', 'open', 'close'].map((name) =>
  defineTool({ name, description: name, ...io, effect: 'read' }),
);
const missing = defineTool({ name: 'lookup', description: 'lookup', ...io, effect: 'read' });

async function learnedRunner() {
  const runner = createRunner({
    invoker: createMockInvoker({
      find: { ok: { ok: true } },
      open: { ok: { ok: true } },
      close: { ok: { ok: true } },
      lookup: { error: Object.assign(new Error('gone'), { status: 404 }) },
    }),
    tools: [find!, open!, close!, missing],
  });
  for (let s = 0; s < 5; s++)
    for (const tool of ['find', 'open', 'close']) await runner.invoke(tool, { q: 'x' }, { sessionId: `s${s}` });
  return runner;
}

describe('metricsTool(runner)', () => {
  it('is a read-only tool definition: name, description, JSON Schema parameters (and input_schema)', async () => {
    const runner = await learnedRunner();
    const tool = metricsTool(runner);
    expect(tool).toMatchObject({
      name: 'chainkit_metrics',
      readOnly: true,
      parameters: { type: 'object', additionalProperties: false },
    });
    expect(tool.description).toMatch(/read-only/i);
    expect(tool.input_schema).toEqual(tool.parameters);
    expect(() => metricsTool({} as never)).toThrow(/createRunner/);
    await runner.close();
  });

  it('exposes the common chains and the transition matrix', async () => {
    const runner = await learnedRunner();
    const tool = metricsTool(runner);
    const chains = tool.execute({ view: 'common_chains' });
    expect(chains).toEqual({
      status: 'ok',
      view: 'common_chains',
      commonChains: [
        { tools: ['find', 'open', 'close'], occurrences: 5, avgSuccessRate: 1, avgTotalDurationMs: expect.any(Number) },
      ],
    });
    const matrix = tool.execute({ view: 'transitions' });
    expect(matrix).toMatchObject({
      status: 'ok',
      transitions: { find: { open: { count: 5, successRate: 1 } }, open: { close: { count: 5 } } },
    });
    expect(tool.execute({ view: 'transitions', from: 'open' })).toMatchObject({
      transitions: { open: { close: { count: 5 } } },
    });
    expect(tool.execute({ view: 'transitions', limit: 1 })).toSatisfy(
      (r: { transitions?: object }) => Object.keys(r.transitions!).length === 1,
    );
    const summary = tool.execute({});
    expect(summary).toMatchObject({
      status: 'ok',
      view: 'summary',
      entryTools: { find: 5 },
      terminalTools: { close: 5 },
      fallbackAdvice: { total: 0 },
    });
    await runner.close();
  });

  it('changes nothing, and answers bad input with invalid_input instead of throwing', async () => {
    const runner = await learnedRunner();
    const tool = metricsTool(runner);
    const before = JSON.stringify(runner.metrics.chainSummary());
    tool.execute({ view: 'summary' });
    expect(JSON.stringify(runner.metrics.chainSummary())).toBe(before);
    expect(runner.metrics.callStats('chainkit_metrics')).toEqual({});
    expect(tool.execute({ view: 'everything' })).toMatchObject({
      status: 'error',
      error: 'invalid_input',
      message: expect.stringContaining('view'),
    });
    expect(tool.execute({ limit: 0 })).toMatchObject({ status: 'error', error: 'invalid_input' });
    expect(tool.execute('nonsense')).toMatchObject({ status: 'error', error: 'invalid_input' });
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('boom');
        },
        ownKeys() {
          throw new Error('boom');
        },
      },
    );
    expect(tool.execute(hostile)).toMatchObject({ status: 'error', error: 'invalid_input' });
    await runner.close();
  });
});

describe('fallback advice in the metrics', () => {
  it('counts each failure that earned fallback advice, by tool and category', async () => {
    const runner = await learnedRunner();
    await runner.invoke('lookup', { q: 'a' }, { sessionId: 'u' }); // 1st failure: no advice yet
    expect(runner.metrics.adviceStats()).toEqual({ total: 0, byTool: {}, byCategory: {} });
    const second = await runner.invoke('lookup', { q: 'a' }, { sessionId: 'u' }); // 2 in a row: advice
    expect(second.metadata.advice.length).toBeGreaterThan(0);
    expect(runner.metrics.adviceStats()).toEqual({ total: 1, byTool: { lookup: 1 }, byCategory: { not_found: 1 } });
    await runner.invoke('lookup', { q: 'a' }, { sessionId: 'u' });
    expect(runner.metrics.adviceStats()).toEqual({ total: 2, byTool: { lookup: 2 }, byCategory: { not_found: 2 } });
    expect(metricsTool(runner).execute({ view: 'summary' })).toMatchObject({ fallbackAdvice: { total: 2 } });
    await runner.close();
  });
});
