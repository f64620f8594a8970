import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, type ToolCall } from 'chainkit';

// A pin on the call object handed to invokers (made by a class since the failure-path work):
// the same keys in the same order, and a `signal` that survives a spread and follows the attempt.
describe('the ToolCall an invoker receives', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const slow = defineTool({
    name: 'slow',
    description: 's',
    input: z.object({}),
    output: z.object({}),
    effect: 'write',
    idempotent: true,
    timeoutMs: 100,
    retry: false,
  });

  it('lists its keys in order, and a spread copy still carries the attempt signal, which aborts at the attempt timeout', async () => {
    vi.useFakeTimers();
    const seen: { keys: string[]; copy: ToolCall; json: string }[] = [];
    const runner = createRunner({
      invoker: (call) => {
        seen.push({ keys: Object.keys(call), copy: { ...call }, json: JSON.stringify({ ...call, signal: undefined }) });
        return new Promise(() => {});
      },
      tools: [slow],
    });
    const done = runner.invoke('slow', {}, { sessionId: 's1', idempotencyKey: 'k1', context: { userId: 'u' } });
    await vi.advanceTimersByTimeAsync(0);
    expect(seen[0]!.keys).toEqual([
      'tool',
      'input',
      'attempt',
      'signal',
      'runId',
      'traceId',
      'context',
      'idempotencyKey',
      'sessionId',
      'progress',
    ]);
    const { signal } = seen[0]!.copy;
    expect(signal).toBeInstanceOf(AbortSignal);
    expect(signal.aborted).toBe(false);
    expect(JSON.parse(seen[0]!.json)).toMatchObject({
      tool: 'slow',
      attempt: 1,
      idempotencyKey: 'k1',
      sessionId: 's1',
      context: { userId: 'u' },
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(signal.aborted).toBe(true);
    expect((await done).status).toBe('failed');
    await runner.close();
  });
});
