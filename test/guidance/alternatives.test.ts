import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';

const search = defineTool({
  name: 'search',
  description: 'Full search',
  input: z.object({ terms: z.array(z.string()) }),
  output: z.object({ hits: z.number() }),
  effect: 'read',
  timeoutMs: 100,
  retry: false,
  alternatives: ['quick_search', 'no_such_tool'],
});
const quick = defineTool({
  name: 'quick_search',
  description: 'Quick search',
  input: z.object({ terms: z.array(z.string()) }),
  output: z.object({ hits: z.number() }),
  effect: 'read',
  expectedDurationMs: 20,
});

describe('error alternatives', () => {
  it('offers a faster declared tool and a longer timeout for timeouts (a small input is not split)', async () => {
    vi.useFakeTimers();
    const runner = createRunner({
      invoker: createMockInvoker({ search: { hang: true } }),
      tools: [search, quick],
      retry: { timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    const pending = runner.invoke('search', { terms: ['a', 'b', 'c'] });
    await vi.advanceTimersByTimeAsync(100);
    const r = await pending;
    vi.useRealTimers();
    expect(r.status === 'failed' && r.error.alternatives.map((a) => a.suggestion)).toEqual([
      'tool:quick_search',
      'increase_timeout:200',
    ]);
    expect(r.status === 'failed' && r.error.alternatives[0]).toMatchObject({
      estimatedDurationMs: 20,
      reason: expect.stringContaining('20 ms'),
    });
  });

  it('says when to retry for rate limits, and ranks alternatives by what worked for outages', async () => {
    const limited = createRunner({
      invoker: createMockInvoker({
        search: { ok: { status: 'error', error: 'rate_limit_exceeded', retry_after: 90 } },
      }),
      tools: [search, quick],
    });
    const r = await limited.invoke('search', { terms: [] }, { timeoutMs: 1000 });
    expect(r.status === 'failed' && r.error.alternatives.slice(0, 2).map((a) => a.suggestion)).toEqual([
      'retry_after:90000',
      'save_progress',
    ]);

    const down = createRunner({
      invoker: createMockInvoker({
        search: { error: Object.assign(new Error('down'), { status: 503 }) },
        quick_search: { ok: { hits: 1 } },
      }),
      tools: [search, quick],
      retry: { unavailable: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
    });
    await down.invoke('quick_search', { terms: [] });
    const r2 = await down.invoke('search', { terms: [] });
    expect(r2.status === 'failed' && r2.error.alternatives).toEqual([
      {
        suggestion: 'tool:quick_search',
        reason: 'Worked in 100 % of recent calls',
        estimatedDurationMs: expect.any(Number),
      },
      { suggestion: 'retry_later:30000', reason: expect.any(String) },
    ]);
    expect(r2.status === 'failed' && r2.error.alternatives.length).toBeLessThanOrEqual(5);
  });
});
