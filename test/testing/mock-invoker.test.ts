import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMockInvoker } from 'chainkit/testing';
import type { ToolCall } from 'chainkit';

const call = (tool: string, signal = new AbortController().signal, attempt = 1): ToolCall => ({
  tool,
  input: { q: 1 },
  attempt,
  signal,
  runId: 'r',
  traceId: 't',
  context: {},
  progress: () => undefined,
});

describe('createMockInvoker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('answers in order, repeating the last, and logs calls', async () => {
    const err = new Error('first');
    const m = createMockInvoker({
      a: [{ error: err }, { ok: 1 }, { ok: 2 }],
      b: (input: { q: number }) => input.q + 1,
    });
    await expect(m(call('a'))).rejects.toBe(err);
    expect(await m(call('a'))).toBe(1);
    expect(await m(call('a'))).toBe(2);
    expect(await m(call('a'))).toBe(2);
    expect(await m(call('b'))).toBe(2);
    expect(m.calls).toHaveLength(5);
    expect(m.callsTo('b')).toEqual([{ tool: 'b', input: { q: 1 }, attempt: 1, at: Date.now() }]);
    await expect(m(call('zzz'))).rejects.toThrow(/No mock answer scripted for tool 'zzz'/);
    m.reset();
    expect(m.calls).toHaveLength(0);
    await expect(m(call('a'))).rejects.toBe(err);
  });

  it('delays with timers and hangs until aborted', async () => {
    const m = createMockInvoker({ slow: { ok: 'done', delayMs: 50 }, stuck: { hang: true } });
    let value: unknown;
    void m(call('slow')).then((v) => (value = v));
    await vi.advanceTimersByTimeAsync(49);
    expect(value).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(value).toBe('done');
    const ac = new AbortController();
    const hung = m(call('stuck', ac.signal));
    ac.abort(new Error('stop'));
    await expect(hung).rejects.toThrow('stop');
  });
});

describe('createMockInvoker answer shapes', () => {
  it('accepts functions inside a sequence and refuses unknown shapes loudly', async () => {
    const m = createMockInvoker({
      a: [(i: { q: number }) => ({ got: i.q }), { ok: 'then' }],
      bad: [{ okay: 1 } as never],
    });
    expect(await m(call('a'))).toEqual({ got: 1 });
    expect(await m(call('a'))).toBe('then');
    await expect(m(call('bad'))).rejects.toThrow(/must be \{ ok \}, \{ error \}/);
  });
});
