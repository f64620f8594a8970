// A write whose outcome is unknown (timed out, connection dropped mid-call) is never retried blindly (API.md §6).
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, type ToolCall, type ToolEffect } from 'chainkit';
import { createMockInvoker, type MockAnswer, type MockFunction } from 'chainkit/testing';
import { http } from '../helpers.js';

const tool = (effect: ToolEffect, idempotent = false) =>
  defineTool({
    name: 'act',
    description: 'act',
    input: z.object({}),
    output: z.object({ ok: z.boolean() }),
    effect,
    idempotent,
    timeoutMs: 1000,
  });
const chainOf = (t: ReturnType<typeof tool>) =>
  defineChain({
    name: 'act_once',
    input: z.object({}),
    steps: [{ id: 'act', tool: t, input: {}, confirm: false }],
    timeoutMs: 60_000,
  });
/** A tool that never answers and ignores its abort signal: attempt 1 is still "running" when a retry would start. */
const deaf: MockFunction = () => new Promise(() => {});
const reset = (): Error => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

async function runOnce(effect: ToolEffect, answers: (MockAnswer | MockFunction)[], idempotent = false) {
  const invoker = createMockInvoker({ act: answers });
  const runner = createRunner({ invoker, random: () => 0 });
  const done = runner.run(chainOf(tool(effect, idempotent)), {});
  await vi.advanceTimersByTimeAsync(10_000);
  const r = await done;
  await runner.close();
  return { r, invoker };
}

describe('no blind retry of a write', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each(['write', 'destructive'] as const)(
    'a %s tool that outlives its timeout, ignoring its signal, is called exactly once',
    async (effect) => {
      const { r, invoker } = await runOnce(effect, [deaf, { ok: { ok: true } }]);
      expect(invoker.calls).toHaveLength(1);
      expect(r.status === 'failed' && r.error).toMatchObject({
        category: 'timeout',
        code: 'attempt_timeout',
        attempts: 1,
        retryable: false,
        step: 'act',
        tool: 'act',
      });
      if (r.status !== 'failed') return;
      expect(r.error.message).toMatch(/outcome is unknown/);
      expect(r.error.userMessage).toMatch(/not known whether/);
      expect(r.error.suggestions.join(' ')).toMatch(/[Cc]heck whether/);
      expect(r.error.suggestions.join(' ')).not.toMatch(/^Try again/);
    },
  );

  it('an idempotent destructive tool is retried once, with the doubled timeout and the same idempotency key', async () => {
    const { r, invoker } = await runOnce('destructive', [deaf, { ok: { ok: true } }], true);
    expect(r.status === 'completed' && r.output).toEqual({ ok: true });
    expect(invoker.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(invoker.calls[0]!.idempotencyKey).toBeDefined();
    expect(invoker.calls[1]!.idempotencyKey).toBe(invoker.calls[0]!.idempotencyKey);
  });

  it('a read keeps the retry table: a timeout is retried once', async () => {
    const { r, invoker } = await runOnce('read', [deaf, { ok: { ok: true } }]);
    expect(r.status).toBe('completed');
    expect(invoker.calls).toHaveLength(2);
  });

  it('a gateway timeout (504) of a write is not retried either', async () => {
    const { r, invoker } = await runOnce('write', [{ error: http(504) }, { ok: { ok: true } }]);
    expect(invoker.calls).toHaveLength(1);
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', code: 'http_504', retryable: false });
  });

  it('a connection reset during a write is not retried; a refused connection (nothing sent) is', async () => {
    const dropped = await runOnce('write', [{ error: reset() }, { ok: { ok: true } }]);
    expect(dropped.invoker.calls).toHaveLength(1);
    expect(dropped.r.status === 'failed' && dropped.r.error).toMatchObject({
      category: 'network',
      code: 'ECONNRESET',
      retryable: false,
    });

    const refused = await runOnce('write', [
      { error: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) },
      { ok: { ok: true } },
    ]);
    expect(refused.r.status).toBe('completed');
    expect(refused.invoker.calls).toHaveLength(2);

    const idempotent = await runOnce('write', [{ error: reset() }, { ok: { ok: true } }], true);
    expect(idempotent.r.status).toBe('completed');
    expect(idempotent.invoker.calls).toHaveLength(2);

    const read = await runOnce('read', [{ error: reset() }, { ok: { ok: true } }]);
    expect(read.r.status).toBe('completed');
  });

  it('holds for runner.invoke too', async () => {
    const seen: ToolCall[] = [];
    const invoker = createMockInvoker({
      act: (_: unknown, call: ToolCall) => {
        seen.push(call);
        return new Promise(() => {});
      },
    });
    const runner = createRunner({ invoker, tools: [tool('destructive')] });
    const done = runner.invoke('act', {});
    await vi.advanceTimersByTimeAsync(40_000);
    const r = await done;
    expect(seen).toHaveLength(1);
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', retryable: false, attempts: 1 });
    await runner.close();
  });
  // The key stays claimed after an unknown outcome: the hung attempt may still take effect.
  it('a write whose outcome is unknown keeps its idempotency key: duplicates get the same failure, the tool runs once', async () => {
    const invoker = createMockInvoker({ act: [deaf, { ok: { ok: true } }] });
    const runner = createRunner({ invoker, tools: [tool('destructive')] });
    const call = () => runner.invoke('act', {}, { idempotencyKey: 'req-1', timeoutMs: 5000 });
    const first = call();
    const concurrent = call(); // waits for the call in flight
    await vi.advanceTimersByTimeAsync(2000);
    const [a, b] = await Promise.all([first, concurrent]);
    const later = await call(); // after the failure, within the pending TTL
    expect(invoker.calls).toHaveLength(1);
    for (const r of [a, b, later])
      expect(r.status === 'failed' && r.error).toMatchObject({
        category: 'timeout',
        code: 'attempt_timeout',
        retryable: false,
      });
    expect(later.status === 'failed' && later.error.message).toMatch(/outcome is unknown/);
    await vi.advanceTimersByTimeAsync(60_000); // the pending marker expired: the key is free again
    const again = call();
    await vi.advanceTimersByTimeAsync(0);
    expect((await again).status).toBe('completed');
    expect(invoker.calls).toHaveLength(2);
    await runner.close();
  });

  it('re-running a chain with the same runId after an unknown outcome does not call the write again', async () => {
    const invoker = createMockInvoker({ act: [deaf, { ok: { ok: true } }] });
    const runner = createRunner({ invoker, random: () => 0 });
    const chain = chainOf(tool('destructive'));
    const first = runner.run(chain, {}, { runId: 'r1' });
    await vi.advanceTimersByTimeAsync(2000);
    const again = runner.run(chain, {}, { runId: 'r1' });
    await vi.advanceTimersByTimeAsync(2000);
    for (const r of [await first, await again])
      expect(r.status === 'failed' && r.error).toMatchObject({ category: 'timeout', retryable: false });
    expect(invoker.calls).toHaveLength(1);
    await runner.close();
  });
});

describe('a write cut off by the run (deadline, cancel) keeps its key claimed', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a re-run with the same runId after the deadline hit a destructive call in flight does not call it again', async () => {
    const act = defineTool({
      name: 'act',
      description: 'act',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'destructive',
      timeoutMs: 5_000,
    });
    const chain = defineChain({
      name: 'cut_off',
      input: z.object({}),
      steps: [{ id: 'act', tool: act, input: {}, confirm: false }],
      timeoutMs: 1_000,
    });
    const invoker = createMockInvoker({ act: [deaf, { ok: { ok: true } }] });
    const runner = createRunner({ invoker, random: () => 0 });
    const first = runner.run(chain, {}, { runId: 'r1' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await first).status === 'failed' && (await first).status).toBe('failed');
    const again = runner.run(chain, {}, { runId: 'r1' });
    await vi.advanceTimersByTimeAsync(1_000);
    const r = await again;
    expect(r.status).toBe('failed');
    expect(invoker.callsTo('act')).toHaveLength(1);

    await runner.close();

    // The caller cancels while the destructive call is in flight: the same holds.
    const hanging = createMockInvoker({ act: [deaf, { ok: { ok: true } }] });
    const other = createRunner({ invoker: hanging, random: () => 0 });
    const cancelled = new AbortController();
    const third = other.run(chain, {}, { runId: 'r2', signal: cancelled.signal });
    await vi.advanceTimersByTimeAsync(10);
    cancelled.abort();
    expect((await third).status).toBe('failed');
    const fourth = other.run(chain, {}, { runId: 'r2' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect((await fourth).status).toBe('failed');
    expect(hanging.callsTo('act')).toHaveLength(1);
    await other.close();
  });

  it('a write that never reached the tool (cancelled before) is released: the re-run calls it', async () => {
    const act = defineTool({
      name: 'act',
      description: 'act',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
      timeoutMs: 5_000,
    });
    const chain = defineChain({
      name: 'never_reached',
      input: z.object({}),
      steps: [
        { id: 'wait', compute: () => new Promise((r) => setTimeout(r, 100)) },
        { id: 'act', tool: act, input: (s) => (s.results.wait, {}) },
      ],
    });
    const invoker = createMockInvoker({ act: { ok: { ok: true } } });
    const runner = createRunner({ invoker });
    const cancelled = new AbortController();
    const first = runner.run(chain, {}, { runId: 'r3', signal: cancelled.signal });
    cancelled.abort();
    await first;
    const again = runner.run(chain, {}, { runId: 'r3' });
    await vi.advanceTimersByTimeAsync(200);
    expect((await again).status).toBe('completed');
    expect(invoker.callsTo('act')).toHaveLength(1);
    await runner.close();
  });
});
