// Issue 26 §2, API.md §9: a missing implementation is found before anyone is asked to confirm.
// functionInvoker(tools, impls) requires every tool (DefinitionError naming the missing ones);
// invokers declare the tools they serve, and a chain with a tool the invoker cannot run fails
// before its first step: at createRunner for its chains, at run/resume for the chain given.
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineTool,
  functionInvoker,
  httpInvoker,
  isDefinitionError,
  memoryCheckpointStore,
  type ToolInvoker,
} from 'chainkit';
import { mcpInvoker } from 'chainkit/mcp';
import { createMockInvoker } from 'chainkit/testing';

const lookup = defineTool({
  name: 'lookup_order',
  description: 'Find an order',
  effect: 'read',
  input: z.object({ orderId: z.string() }),
  output: z.object({ amount: z.number() }),
});
const refund = defineTool({
  name: 'refund_payment',
  description: 'Refund an order',
  effect: 'destructive',
  input: z.object({ orderId: z.string(), amount: z.number() }),
  output: z.object({ refunded: z.boolean() }),
});
const unrefund = defineTool({
  name: 'cancel_refund',
  description: 'Undo a refund',
  effect: 'write',
  input: z.object({ orderId: z.string() }),
  output: z.object({ ok: z.boolean() }),
});
const notify = defineTool({
  name: 'notify',
  description: 'Tell the customer',
  effect: 'write',
  input: z.object({ orderId: z.string() }),
  output: z.object({ sent: z.boolean() }),
});

const refundChain = chain('refund', { input: z.object({ orderId: z.string() }) })
  .tool('order', lookup, (ref) => ({ orderId: ref('input', 'orderId') }))
  .tool('refund', refund, (ref) => ({ orderId: ref('input', 'orderId'), amount: ref('order', 'amount') }), {
    confirm: { prompt: (s) => `Refund ${s.results.order.amount} €?` },
  })
  .build();

/** The same chain with a compensated refund and a last step whose tool is not the refund's. */
const refundAndNotify = chain('refund_notify', { input: z.object({ orderId: z.string() }) })
  .tool('order', lookup, (ref) => ({ orderId: ref('input', 'orderId') }))
  .tool('refund', refund, (ref) => ({ orderId: ref('input', 'orderId'), amount: ref('order', 'amount') }), {
    confirm: false,
    compensate: { tool: unrefund, input: { orderId: 'x' } },
  })
  .tool('notify', notify, (ref) => ({ orderId: ref('input', 'orderId') }))
  .build();

const lookupImpl = vi.fn(async () => ({ amount: 25 }));
const refundImpl = async () => ({ refunded: true });

/** The error a call threw (or rejected with). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('functionInvoker requires every implementation', () => {
  it('a tool left without an implementation is a DefinitionError naming it', async () => {
    // The types refuse it too (test/types/invokers.test-d.ts); a JavaScript caller meets it here.
    const error = await thrown(() => functionInvoker([lookup, refund, notify], { lookup_order: lookupImpl } as never));
    expect(isDefinitionError(error)).toBe(true);
    expect((error as Error).message).toContain("No implementation for tool 'refund_payment'");
    expect((error as { issues: unknown }).issues).toEqual([
      { path: 'functions.refund_payment', message: "No implementation for tool 'refund_payment'." },
      { path: 'functions.notify', message: "No implementation for tool 'notify'." },
    ]);
  });

  it('serves exactly the tools it has functions for, in both forms', () => {
    const typed = functionInvoker([lookup, refund], { lookup_order: lookupImpl, refund_payment: refundImpl });
    expect([typed.serves?.('lookup_order'), typed.serves?.('refund_payment'), typed.serves?.('notify')]).toEqual([
      true,
      true,
      false,
    ]);
    const untyped = functionInvoker({ lookup_order: lookupImpl });
    expect([
      untyped.serves?.('lookup_order'),
      untyped.serves?.('refund_payment'),
      untyped.serves?.('toString'),
    ]).toEqual([true, false, false]);
  });
});

describe('a chain whose tool the invoker cannot run fails before its first step', () => {
  it('createRunner refuses registered chains with unserved tools, naming each chain and its tools', async () => {
    const invoker = functionInvoker({ lookup_order: lookupImpl });
    const error = await thrown(() => createRunner({ invoker, chains: [refundChain, refundAndNotify] }));
    expect(isDefinitionError(error)).toBe(true);
    const issues = (error as { issues: { path: string; message: string }[] }).issues;
    expect(issues.map((i) => i.path)).toEqual(['chains[0]', 'chains[1]']);
    expect(issues[0]!.message).toContain("Chain 'refund' needs a tool the invoker does not serve: refund_payment.");
    // A compensate tool counts: the run would need it to undo the refund.
    expect(issues[1]!.message).toContain(
      "Chain 'refund_notify' needs tools the invoker does not serve: refund_payment, cancel_refund, notify.",
    );
  });

  it('counts the tools of chains run by a step: chain, forEach, branch and loop', async () => {
    const notifyOne = chain('notify_one', { input: z.object({ orderId: z.string() }) })
      .tool('notify', notify, (ref) => ({ orderId: ref('input', 'orderId') }))
      .build();
    const orders = defineTool({
      name: 'list_orders',
      description: 'Open orders',
      effect: 'read',
      input: z.object({}),
      output: z.object({ ids: z.array(z.object({ orderId: z.string() })) }),
    });
    const notifyAll = chain('notify_all', { input: z.object({}) })
      .tool('orders', orders, () => ({}))
      .forEach('sent', (ref) => ({
        over: ref('orders', 'ids'),
        chain: notifyOne,
        input: (item) => ({ orderId: item('orderId') }),
      }))
      .build();
    const invoker = functionInvoker({ list_orders: async () => ({ ids: [] }) });
    const error = await thrown(() => createRunner({ invoker, chains: [notifyAll] }));
    expect(isDefinitionError(error)).toBe(true);
    expect((error as Error).message).toContain("Chain 'notify_all' needs a tool the invoker does not serve: notify.");
  });

  it('a gated chain with a missing implementation never asks for confirmation (run of an unregistered chain)', async () => {
    const lookupCalls = vi.fn(async () => ({ amount: 25 }));
    const runner = createRunner({ invoker: functionInvoker({ lookup_order: lookupCalls }) });
    const requested = vi.fn();
    runner.events.on('confirmation:requested', requested);
    runner.events.on('chain:start', requested);
    const confirm = vi.fn(() => true);
    const error = await thrown(() => runner.run(refundChain, { orderId: 'o1' }, { confirm }));
    expect(isDefinitionError(error)).toBe(true);
    expect((error as Error).message).toContain('refund_payment');
    expect(confirm).not.toHaveBeenCalled();
    expect(requested).not.toHaveBeenCalled();
    expect(lookupCalls).not.toHaveBeenCalled(); // not even the first step ran
    // Without `confirm`: no resume token is handed out either.
    await expect(runner.run(refundChain, { orderId: 'o1' })).rejects.toThrow(/refund_payment/);
    await runner.close();
  });

  it('the mock invoker serves the tools given (typed) or scripted (untyped)', async () => {
    const typed = createMockInvoker([lookup, refund], { lookup_order: { ok: { amount: 25 } } });
    expect([typed.serves?.('lookup_order'), typed.serves?.('refund_payment'), typed.serves?.('notify')]).toEqual([
      true,
      true,
      false,
    ]);
    const invoker = createMockInvoker({ lookup_order: { ok: { amount: 25 } } });
    expect([invoker.serves?.('lookup_order'), invoker.serves?.('refund_payment')]).toEqual([true, false]);
    const runner = createRunner({ invoker });
    await expect(runner.run(refundChain, { orderId: 'o1' })).rejects.toThrow(
      /needs a tool the invoker does not serve: refund_payment/,
    );
    expect(invoker.calls).toEqual([]);
    await runner.close();
  });

  it('a resume given a chain the invoker cannot finish throws before the token is taken', async () => {
    const checkpoints = memoryCheckpointStore();
    const secret = 'a-secret-shared-by-both-runners';
    const full = createRunner({
      invoker: functionInvoker([lookup, refund], { lookup_order: lookupImpl, refund_payment: refundImpl }),
      chains: [refundChain],
      stores: { checkpoints },
      secret,
    });
    const parked = await full.run(refundChain, { orderId: 'o1' });
    if (parked.status !== 'awaiting_confirmation') throw new Error(`expected a gate, got ${parked.status}`);
    const partial = createRunner({
      invoker: functionInvoker({ lookup_order: lookupImpl }),
      stores: { checkpoints },
      secret,
    });
    await expect(partial.resume(parked.resumeToken, { approved: true }, { chain: refundChain })).rejects.toThrow(
      /refund_payment/,
    );
    // The token is still good where the chain can be finished.
    const done = await full.resume(parked.resumeToken, { approved: true });
    expect(done.status === 'completed' && done.output).toEqual({ refunded: true });
    await Promise.all([full.close(), partial.close()]);
  });

  it('an invoker that declares nothing is assumed to serve every tool', async () => {
    const plain: ToolInvoker = async (call) =>
      call.tool === 'lookup_order' ? { amount: 25 } : Promise.reject(Object.assign(new Error('no'), { status: 404 }));
    const runner = createRunner({ invoker: plain, chains: [refundChain] });
    const r = await runner.run(refundChain, { orderId: 'o1' });
    expect(r.status).toBe('awaiting_confirmation');
    await runner.close();
  });

  it('httpInvoker declares the tools it serves when given `tools`', async () => {
    const http = httpInvoker({ baseUrl: 'http://127.0.0.1:9', tools: [lookup, 'refund_payment'] });
    expect([http.serves?.('lookup_order'), http.serves?.('refund_payment'), http.serves?.('notify')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(() => createRunner({ invoker: http, chains: [refundAndNotify] })).toThrow(
      /needs tools the invoker does not serve: cancel_refund, notify/,
    );
    expect(httpInvoker({ baseUrl: 'http://127.0.0.1:9' }).serves).toBeUndefined();
  });

  it('mcpInvoker declares the tools it serves when given `tools`', () => {
    const client = { callTool: async () => ({ content: [] }) } as unknown as Parameters<typeof mcpInvoker>[0];
    const mcp = mcpInvoker(client, { tools: [lookup, refund] });
    expect([mcp.serves?.('lookup_order'), mcp.serves?.('refund_payment'), mcp.serves?.('notify')]).toEqual([
      true,
      true,
      false,
    ]);
    expect(() => createRunner({ invoker: mcp, chains: [refundChain, refundAndNotify] })).toThrow(
      /chains\[1\]: Chain 'refund_notify' needs tools the invoker does not serve: cancel_refund, notify/,
    );
    expect(mcpInvoker(client).serves).toBeUndefined();
    expect(() => mcpInvoker(client, { tools: [42 as never] })).toThrow(TypeError);
  });
});
