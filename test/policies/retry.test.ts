import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, ref, type StepRetryEvent } from 'chainkit';
import { createMockInvoker, type MockAnswer } from 'chainkit/testing';
import { http } from '../helpers.js';

const work = defineTool({
  name: 'work',
  description: 'Do work',
  input: z.object({ q: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'read',
  timeoutMs: 1000,
});
const chain = (timeoutMs = 60_000) =>
  defineChain({
    name: 'one',
    input: z.object({ q: z.string() }),
    steps: [{ id: 'w', tool: work, input: { q: ref('input', 'q') } }],
    timeoutMs,
  });

function setup(answers: MockAnswer[], opts: { timeoutMs?: number; random?: () => number } = {}) {
  const invoker = createMockInvoker({ work: answers });
  const runner = createRunner({ invoker, tools: [work], random: opts.random ?? (() => 0) });
  const retries: StepRetryEvent[] = [];
  runner.events.on('step:retry', (e) => retries.push(e));
  const done = runner.run(chain(opts.timeoutMs), { q: 'x' });
  const gaps = () => invoker.calls.slice(1).map((c, i) => c.at - invoker.calls[i]!.at);
  return { invoker, runner, retries, done, gaps };
}

describe('retry policy', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('retries internal errors after exactly 100, 200, 400 ms with jitter 0', async () => {
    const fail = { ok: { status: 'error', error: 'database_error', message: 'deadlock' } };
    const { done, gaps, retries, invoker } = setup([fail, fail, fail, { ok: { ok: true } }]);
    await vi.runAllTimersAsync();
    const r = await done;
    expect(r.status).toBe('completed');
    expect(gaps()).toEqual([100, 200, 400]);
    expect(retries.map((e) => e.delayMs)).toEqual([100, 200, 400]);
    expect(invoker.calls.map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
    expect(r.trace.steps[0]!.attempts).toBe(4);
  });

  it("waits out a 503's Retry-After before asking again (the backoff when it is shorter), and fails at once past the deadline", async () => {
    const busy = (headers: Record<string, string>) => ({ error: http(503, 'busy', { headers }) });
    const { done, gaps, retries } = setup([busy({ 'retry-after': '3' }), busy({}), { ok: { ok: true } }]);
    await vi.runAllTimersAsync();
    expect((await done).status).toBe('completed');
    expect(gaps()).toEqual([3000, 1000]); // the server's 3 s, then the table's second backoff
    expect(retries.map((e) => e.delayMs)).toEqual([3000, 1000]);

    const late = setup([busy({ 'retry-after': '120' }), { ok: { ok: true } }], { timeoutMs: 10_000 });
    await vi.runAllTimersAsync();
    const r = await late.done;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'unavailable', retryAfterMs: 120_000 });
    expect(late.invoker.calls).toHaveLength(1);

    // The server's wait is spread as a rate limit's is (0–1000 ms), so its callers do not all return at once.
    const spread = setup([busy({ 'retry-after': '3' }), { ok: { ok: true } }], { random: () => 0.5 });
    await vi.runAllTimersAsync();
    expect((await spread.done).status).toBe('completed');
    expect(spread.gaps()).toEqual([3500]);
  });

  it("ignores a classifier's retryAfterMs that is no wait (NaN, negative): the backoff holds", async () => {
    const runner = createRunner({
      invoker: createMockInvoker({
        work: [{ error: { kind: 'x503' } }, { error: { kind: 'x503' } }, { ok: { ok: true } }],
      }),
      tools: [work],
      random: () => 0,
      classifiers: [
        (e) =>
          (e as { kind?: string }).kind === 'x503'
            ? { category: 'unavailable', code: 'busy', message: 'busy', retryAfterMs: Number.NaN }
            : undefined,
      ],
    });
    const retries: StepRetryEvent[] = [];
    runner.events.on('step:retry', (e) => retries.push(e));
    const done = runner.run(chain(), { q: 'x' });
    await vi.runAllTimersAsync();
    expect((await done).status).toBe('completed');
    expect(retries.map((e) => e.delayMs)).toEqual([500, 1000]); // before: NaN, a retry at once each time
  });

  it('gives up on internal errors after 3 retries with the last error', async () => {
    const { done, invoker } = setup([{ error: http(500, 'boom') }]);
    await vi.runAllTimersAsync();
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'internal',
      code: 'http_500',
      attempts: 4,
      retryable: true,
      step: 'w',
      tool: 'work',
    });
    expect(invoker.calls).toHaveLength(4);
  });

  it('waits 500 then 1000 ms for 503s', async () => {
    const { done, gaps } = setup([{ error: http(503) }, { error: http(503) }, { ok: { ok: true } }]);
    await vi.runAllTimersAsync();
    expect((await done).status).toBe('completed');
    expect(gaps()).toEqual([500, 1000]);
  });

  it('adds jitter from the runner random source', async () => {
    const { done, gaps } = setup([{ error: http(503) }, { ok: { ok: true } }], { random: () => 1 });
    await vi.runAllTimersAsync();
    await done;
    expect(gaps()).toEqual([625]); // 500 + 25 %
  });

  it('retries a timeout once with the attempt timeout doubled', async () => {
    const { done, invoker } = setup([{ hang: true }]);
    await vi.advanceTimersByTimeAsync(999);
    expect(invoker.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(invoker.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1999);
    let settled = false;
    void done.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'timeout',
      code: 'attempt_timeout',
      attempts: 2,
    });
    expect(r.status === 'failed' && r.error.message).toContain('2000 ms');
  });

  it('honours Retry-After (plus jitter) for rate limits, once', async () => {
    const limited = { ok: { status: 'error', error: 'rate_limit_exceeded', retry_after: 2 } };
    const { done, gaps } = setup([limited, { ok: { ok: true } }], { random: () => 0.5 });
    await vi.runAllTimersAsync();
    expect((await done).status).toBe('completed');
    expect(gaps()).toEqual([2500]);
  });

  it('fails at once with retryAfterMs when the Retry-After wait would pass the deadline', async () => {
    const { done, invoker } = setup([{ error: http(429, 'slow down', { headers: { 'retry-after': '30' } }) }], {
      timeoutMs: 5000,
    });
    await vi.advanceTimersByTimeAsync(0);
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({
      category: 'rate_limited',
      retryAfterMs: 30_000,
      attempts: 1,
    });
    expect(invoker.calls).toHaveLength(1);
  });

  it('does not retry user errors', async () => {
    const { done, invoker } = setup([{ error: http(404, 'no such task') }]);
    await vi.runAllTimersAsync();
    const r = await done;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'not_found', attempts: 1, retryable: false });
    expect(invoker.calls).toHaveLength(1);
  });

  it('does not wait past the chain deadline', async () => {
    const { done, invoker } = setup([{ error: http(503) }], { timeoutMs: 700 });
    await vi.runAllTimersAsync();
    const r = await done;
    // 503 at 0 ms, retry after 500 ms, the next wait (1000 ms) would end after 700 ms: fail at once.
    expect(invoker.calls).toHaveLength(2);
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'unavailable', attempts: 2 });
  });

  it('completes a partial runner-level rule from the default of its category', async () => {
    const invoker = createMockInvoker({ work: [{ error: http(500) }, { error: http(500) }, { ok: { ok: true } }] });
    const runner = createRunner({ invoker, tools: [work], random: () => 0, retry: { internal: { retries: 1 } } });
    const done = runner.run(chain(), { q: 'x' });
    await vi.runAllTimersAsync();
    const r = await done;
    expect(r.status === 'failed' && r.error.attempts).toBe(2); // one retry, not three
    expect(invoker.calls[1]!.at - invoker.calls[0]!.at).toBe(100); // the default 100 ms wait kept
  });

  it('respects per-tool overrides and retry: false', async () => {
    const strict = defineTool({
      name: 'work',
      description: 'w',
      input: z.object({ q: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: false,
    });
    const invoker = createMockInvoker({ work: { error: http(503) } });
    const runner = createRunner({ invoker, random: () => 0 });
    const r = await runner.run(
      defineChain({ name: 'c', input: z.object({}), steps: [{ id: 'w', tool: strict, input: { q: 'x' } }] }),
      {},
    );
    expect(r.status === 'failed' && r.error.attempts).toBe(1);

    const quick = defineTool({
      name: 'work',
      description: 'w',
      input: z.object({ q: z.string() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'read',
      retry: { retries: 1, minDelayMs: 10 },
    });
    const invoker2 = createMockInvoker({ work: [{ error: http(500) }, { error: http(500) }, { ok: { ok: true } }] });
    const r2 = createRunner({ invoker: invoker2, random: () => 0 }).run(
      defineChain({ name: 'c', input: z.object({}), steps: [{ id: 'w', tool: quick, input: { q: 'x' } }] }),
      {},
    );
    await vi.runAllTimersAsync();
    expect((await r2).status).toBe('failed');
    expect(invoker2.calls.map((c) => c.at - invoker2.calls[0]!.at)).toEqual([0, 10]);
  });
});
