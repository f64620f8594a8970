import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';

const search = defineTool({
  name: 'search',
  description: 'Search',
  input: z.object({ q: z.string(), api_key: z.string().optional() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
  timeoutMs: 100,
});

describe('ChainErrorInfo.context', () => {
  it('carries the timeout that applied, the input size in characters and the attempt', async () => {
    vi.useFakeTimers();
    try {
      // The default table retries a timeout once with the attempt timeout doubled: 100 ms, then 200 ms.
      const runner = createRunner({ invoker: createMockInvoker({ search: { hang: true } }), tools: [search] });
      const input = { q: 'x'.repeat(50) };
      const pending = runner.invoke('search', input);
      await vi.advanceTimersByTimeAsync(100 + 200);
      const r = await pending;
      if (r.status !== 'failed') throw new Error(r.status);
      expect(r.error.context).toEqual({ timeoutMs: 200, inputSize: JSON.stringify(input).length, attempt: 2 });
      expect(r.trace.steps[0]!.error!.context).toEqual(r.error.context);
      await runner.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('is on a chain step failure, and holds no secret (numbers only, never the input)', async () => {
    const chain = defineChain({
      name: 'find',
      description: 'find',
      input: z.object({ key: z.string() }),
      steps: [{ id: 's', tool: search, input: { q: 'hello', api_key: 'sk-live-0123456789' } }],
    });
    const runner = createRunner({
      invoker: createMockInvoker({
        search: { error: Object.assign(new Error('Forbidden for sk-live-0123456789'), { status: 403 }) },
      }),
      tools: [search],
    });
    const r = await runner.run(chain, { key: 'k' });
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error.context).toEqual({ timeoutMs: 100, inputSize: 44, attempt: 1 });
    expect(JSON.stringify(r)).not.toContain('sk-live-0123456789');
    await runner.close();
  });
});
