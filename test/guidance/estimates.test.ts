import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, TimingModel } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';

const io = { input: z.object({ q: z.string() }), output: z.object({ n: z.number() }) };
const unknownSpeed = defineTool({ name: 'unknown_speed', description: 'No declared duration', ...io, effect: 'read' });
const declared = defineTool({
  name: 'declared',
  description: 'Declared at 300 ms',
  ...io,
  effect: 'read',
  expectedDurationMs: 300,
});
const badRequest = Object.assign(new Error('bad request'), { status: 400 });
const slowTimeout = defineTool({
  name: 'slow_timeout',
  description: 'Allowed 60 s, nothing known',
  ...io,
  effect: 'read',
  timeoutMs: 60_000,
});

describe('timing estimates: source and the 15 s default', () => {
  const tools = new Map([unknownSpeed, declared, slowTimeout].map((t) => [t.name, t]));

  it('estimates a tool with no declared or learned duration at 15 s with confidence low, source default', () => {
    const m = new TimingModel(tools);
    expect(m.estimate('unknown_speed')).toMatchObject({
      estimatedDurationMs: 15_000,
      confidence: 'low',
      source: 'default',
      samples: 0,
    });
    // A default is no prediction: it never says a call will time out (the tool allows 10 s).
    expect(m.estimate('unknown_speed')).toMatchObject({ timeoutMs: 10_000, willTimeout: false });
    expect(m.estimate('slow_timeout')).toMatchObject({
      estimatedDurationMs: 15_000,
      timeoutMs: 60_000,
      willTimeout: false,
    });
    expect(m.estimate('no_such_tool')).toMatchObject({
      estimatedDurationMs: 15_000,
      confidence: 'low',
      source: 'default',
    });
  });

  it('says declared for a declared duration and learned once samples exist', () => {
    const m = new TimingModel(tools);
    expect(m.estimate('declared')).toMatchObject({ estimatedDurationMs: 300, confidence: 'low', source: 'declared' });
    m.record('declared', 120);
    expect(m.estimate('declared')).toMatchObject({ estimatedDurationMs: 120, source: 'learned' });
    m.record('unknown_speed', 40);
    expect(m.estimate('unknown_speed')).toMatchObject({ estimatedDurationMs: 40, source: 'learned' });
  });

  it("puts the source in a result's metadata: default, declared, then learned", async () => {
    // A failure teaches no duration; a success does (the metadata is built after the call is learned).
    const runner = createRunner({
      invoker: createMockInvoker({
        unknown_speed: [{ error: badRequest }, { ok: { n: 1 } }],
        declared: { error: badRequest },
      }),
      tools: [unknownSpeed, declared],
    });
    const first = await runner.invoke('unknown_speed', { q: 'a' });
    expect(first.status).toBe('failed');
    expect(first.metadata.timing).toMatchObject({
      estimatedDurationMs: 15_000,
      confidence: 'low',
      source: 'default',
      willTimeout: false,
    });
    const second = await runner.invoke('unknown_speed', { q: 'a' });
    expect(second.metadata.timing.source).toBe('learned');
    const d = await runner.invoke('declared', { q: 'a' });
    expect(d.metadata.timing).toMatchObject({ estimatedDurationMs: 300, source: 'declared' });
    await runner.close();
  });

  it('gives a chain the weakest source of its steps, and counts 15 s for a step nothing is known of', async () => {
    const chain = defineChain({
      name: 'two',
      description: 'unknown then declared',
      input: z.object({ q: z.string() }),
      steps: [
        { id: 'a', tool: unknownSpeed, input: { q: 'x' } },
        { id: 'b', tool: declared, input: { q: 'y' } },
      ],
    });
    const runner = createRunner({
      invoker: createMockInvoker({ unknown_speed: { error: badRequest }, declared: { error: badRequest } }),
      tools: [unknownSpeed, declared],
    });
    const r = await runner.run(chain, { q: 'a' }); // both fail: nothing learned
    expect(r.metadata.timing).toMatchObject({ estimatedDurationMs: 15_300, confidence: 'low', source: 'default' });
    await runner.close();
  });
});
