import { describe, expect, it } from 'vitest';
import { codeClassifier, createRunner, defineTool } from 'chainkit';
import { z } from 'zod';
import { createMockInvoker } from 'chainkit/testing';
import { toErrorInfo } from '../../src/errors/messages.js';

describe('user messages per code', () => {
  it('a rate limit says how many seconds to wait, rounded up; one second is singular; unknown wait stays generic', () => {
    expect(
      toErrorInfo({ category: 'rate_limited', code: 'http_429', message: 'x', retryAfterMs: 30_000 }).userMessage,
    ).toBe('Too many requests right now. Please wait 30 seconds and try again.');
    expect(
      toErrorInfo({ category: 'rate_limited', code: 'http_429', message: 'x', retryAfterMs: 1_200 }).userMessage,
    ).toBe('Too many requests right now. Please wait 2 seconds and try again.');
    expect(
      toErrorInfo({ category: 'rate_limited', code: 'http_429', message: 'x', retryAfterMs: 400 }).userMessage,
    ).toBe('Too many requests right now. Please wait 1 second and try again.');
    expect(toErrorInfo({ category: 'rate_limited', code: 'http_429', message: 'x' }).userMessage).toBe(
      'Too many requests right now. Please try again shortly.',
    );
  });

  it("a domain's code can carry its own user message", async () => {
    const billing = codeClassifier({
      card_declined: { category: 'invalid_input', userMessage: 'Your card was declined.' },
      ledger_locked: 'conflict',
    });
    const charge = defineTool({
      name: 'charge',
      description: 'Charge',
      input: z.object({ amount: z.number() }),
      output: z.object({ ok: z.boolean() }),
      effect: 'write',
      classifiers: [billing],
    });
    const runner = createRunner({
      invoker: createMockInvoker({
        charge: [
          { ok: { status: 'error', error: 'card_declined' } },
          { error: Object.assign(new Error('locked'), { code: 'ledger_locked' }) },
        ],
      }),
      tools: [charge],
    });
    const a = await runner.invoke('charge', { amount: 5 }, { idempotencyKey: 'a' });
    expect(a.status === 'failed' && a.error).toMatchObject({
      category: 'invalid_input',
      code: 'card_declined',
      userMessage: 'Your card was declined.',
    });
    const b = await runner.invoke('charge', { amount: 5 }, { idempotencyKey: 'b' });
    expect(b.status === 'failed' && b.error).toMatchObject({
      category: 'conflict',
      code: 'ledger_locked',
      userMessage: 'That item was changed by someone else in the meantime.',
    });
    expect(() => codeClassifier({ x: { category: 'nope' } } as never)).toThrow(/category of code 'x'/);
    await runner.close();
  });

  it('keeps secrets and stack traces out of the user message', async () => {
    const leak = codeClassifier({ boom: { category: 'internal', userMessage: 'Failed with password=hunter2' } });
    const t = defineTool({
      name: 't',
      description: 't',
      input: z.object({ password: z.string() }),
      output: z.object({}),
      effect: 'read',
      retry: false,
      classifiers: [leak],
    });
    const err = Object.assign(new Error('boom hunter2'), { code: 'boom' });
    const runner = createRunner({ invoker: createMockInvoker({ t: { error: err } }), tools: [t] });
    const r = await runner.invoke('t', { password: 'hunter2' });
    if (r.status !== 'failed') throw new Error(r.status);
    expect(r.error.userMessage).not.toContain('hunter2');
    for (const category of ['not_found', 'rate_limited', 'internal', 'unknown'] as const) {
      const info = toErrorInfo({ category, code: category, message: err.stack!, retryAfterMs: 3000 });
      expect(info.userMessage).not.toMatch(/\n\s+at |hunter2/);
    }
    await runner.close();
  });
});
