import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';

const write = defineTool({ name: 'write', description: 'w', input: z.object({}), output: z.object({ ok: z.boolean() }), effect: 'write' });
const chain = defineChain({ name: 'w', input: z.object({}), steps: [{ id: 'w', tool: write, input: {} }], timeoutMs: 500 });

describe('stores that fail or fall silent', () => {
  afterEach(() => { vi.useRealTimers(); });

  it('a store that never answers fails the call with store_unavailable at the deadline, without calling the tool', async () => {
    vi.useFakeTimers();
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    const silent = { begin: () => new Promise<never>(() => {}), complete: async () => {}, fail: async () => {} };
    const pending = createRunner({ invoker, stores: { idempotency: silent } }).run(chain, {});
    await vi.advanceTimersByTimeAsync(500);
    const r = await pending;
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'unavailable', code: 'store_unavailable', message: expect.stringContaining('no answer before the deadline') });
    expect(invoker.calls).toHaveLength(0);
  });

  it('a breaker store that throws fails safe; one that fails to record does not hide a success', async () => {
    const invoker = createMockInvoker({ write: { ok: { ok: true } } });
    const broken = { acquire: () => { throw new Error('boom'); }, success: () => undefined, failure: () => undefined, isOpen: () => false };
    const r = await createRunner({ invoker, stores: { breakers: broken } }).run(chain, {});
    expect(r.status === 'failed' && r.error.code).toBe('store_unavailable');
    const flaky = { acquire: () => ({ status: 'closed' as const }), success: () => Promise.reject(new Error('lost')), failure: () => undefined, isOpen: () => false };
    expect((await createRunner({ invoker, stores: { breakers: flaky } }).run(chain, {})).status).toBe('completed');
  });
});
