import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, MetricsCollector, TimingModel, type ChainErrorInfo, type Tool } from 'chainkit';
import { alternativesFor } from '../../src/guidance/alternatives.js';
import { createMockInvoker } from 'chainkit/testing';

const io = { input: z.object({ text: z.string() }), output: z.object({ ok: z.boolean() }) };
const tool = (name: string, timeoutMs: number, extra: { alternatives?: string[]; expectedDurationMs?: number } = {}) =>
  defineTool({ name, description: name, ...io, effect: 'read', timeoutMs, ...extra });
const sources = (tools: Tool[]) => {
  const byName = new Map(tools.map((t) => [t.name, t]));
  return { tools: byName, chains: new Map(), metrics: new MetricsCollector(), timing: new TimingModel(byName) };
};
const timedOut = (name: string, context: ChainErrorInfo['context'] = {}): ChainErrorInfo => ({
  category: 'timeout',
  code: 'attempt_timeout',
  message: 'slow',
  userMessage: 'slow',
  suggestions: [],
  alternatives: [],
  retryable: true,
  attempts: 1,
  tool: name,
  context,
});
const suggestions = (tools: Tool[], name: string, context?: ChainErrorInfo['context']) =>
  alternativesFor(sources(tools), timedOut(name, context)).map((a) => a.suggestion);

describe('timeout alternatives', () => {
  it('offers split_input only over 10,000 characters of input', () => {
    const t = tool('summarise', 5_000);
    expect(suggestions([t], 'summarise', { inputSize: 1_500 })).not.toContain('split_input');
    expect(suggestions([t], 'summarise', { inputSize: 10_000 })).not.toContain('split_input');
    expect(suggestions([t], 'summarise', { inputSize: 10_001 })).toContain('split_input');
  });

  it('offers 2× the tool timeout: 5 s → 10 s, 60 s → 120 s', () => {
    expect(suggestions([tool('a', 5_000)], 'a')).toContain('increase_timeout:10000');
    expect(suggestions([tool('b', 60_000)], 'b')).toContain('increase_timeout:120000');
  });

  it('caps at 120 s and never offers less than the tool already has: a 90 s tool gets 120 s, a 150 s tool nothing', () => {
    expect(suggestions([tool('c', 90_000)], 'c')).toContain('increase_timeout:120000');
    expect(suggestions([tool('d', 150_000)], 'd').filter((s) => s.startsWith('increase_timeout'))).toEqual([]);
  });

  it('doubles the timeout that applied, never below the tool own: a step given 1 s on a 10 s tool gets 10 s', () => {
    expect(suggestions([tool('e', 10_000)], 'e', { timeoutMs: 1_000 })).toContain('increase_timeout:10000');
    expect(suggestions([tool('f', 10_000)], 'f', { timeoutMs: 20_000 })).toContain('increase_timeout:40000');
  });

  it('keeps room for the timeout advice when 5 faster alternatives exist', () => {
    const fast = ['f1', 'f2', 'f3', 'f4', 'f5'].map((n, i) => tool(n, 5_000, { expectedDurationMs: 10 * (i + 1) }));
    const slow = tool('slow', 5_000, { alternatives: fast.map((f) => f.name), expectedDurationMs: 4_000 });
    const small = suggestions([slow, ...fast], 'slow', { inputSize: 100 });
    expect(small).toEqual(['tool:f1', 'tool:f2', 'tool:f3', 'tool:f4', 'increase_timeout:10000']);
    const large = suggestions([slow, ...fast], 'slow', { inputSize: 20_000 });
    expect(large).toEqual(['tool:f1', 'tool:f2', 'tool:f3', 'split_input', 'increase_timeout:10000']);
    expect(large).toHaveLength(5);
  });

  it('comes from a real timed-out call: the input size is measured in characters', async () => {
    vi.useFakeTimers();
    try {
      const t = tool('summarise', 100);
      const runner = createRunner({
        invoker: createMockInvoker({ summarise: { hang: true } }),
        tools: [t],
        retry: { timeout: { retries: 0, minDelayMs: 0, factor: 1, maxDelayMs: 0 } },
      });
      const pending = runner.invoke('summarise', { text: 'x'.repeat(12_000) });
      await vi.advanceTimersByTimeAsync(100);
      const r = await pending;
      expect(r.status === 'failed' && r.error.alternatives.map((a) => a.suggestion)).toEqual([
        'split_input',
        'increase_timeout:200',
      ]);
      const short = runner.invoke('summarise', { text: 'x'.repeat(2_000) });
      await vi.advanceTimersByTimeAsync(100);
      const r2 = await short;
      expect(r2.status === 'failed' && r2.error.alternatives.map((a) => a.suggestion)).toEqual([
        'increase_timeout:200',
      ]);
      await runner.close();
    } finally {
      vi.useRealTimers();
    }
  });
});
