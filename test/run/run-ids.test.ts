// Run ids are checked before any store is asked, by every call that takes one (API.md §10).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineTool, functionInvoker, memoryRunStore } from '../../src/index.js';
import { type RunStore } from '../../src/stores/index.js';

const BAD_IDS: unknown[] = ['', 'x'.repeat(256), 'a\nb', 'nul\u0000', 'lone-\uD800', 'lone-\uDFFF-end', { id: 1 }];

describe('run ids outside runs', () => {
  it('getRun, cancel, decide and watch refuse a malformed run id with invalid_run_id before any store call', async () => {
    const ping = defineTool({
      name: 'ping',
      description: 'ping',
      effect: 'read',
      input: z.object({}),
      output: z.object({}),
    });
    const store = memoryRunStore();
    let asked = 0;
    const counting: RunStore = new Proxy(store, {
      get(target, key, receiver) {
        const value: unknown = Reflect.get(target, key, receiver);
        if (typeof value !== 'function' || key === 'events') return value;
        return (...args: unknown[]) => {
          asked++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const runner = createRunner({
      invoker: functionInvoker([ping], { ping: () => ({}) }),
      tools: [ping],
      stores: { runs: counting },
    });
    try {
      for (const id of BAD_IDS) {
        const runId = id as string;
        await expect(runner.getRun(runId)).rejects.toMatchObject({
          info: { category: 'invalid_input', code: 'invalid_run_id' },
        });
        await expect(runner.cancel(runId)).rejects.toMatchObject({
          info: { category: 'invalid_input', code: 'invalid_run_id' },
        });
        await expect(runner.decide(runId, { approved: true, by: 'ops' })).rejects.toMatchObject({
          info: { category: 'invalid_input', code: 'invalid_run_id' },
        });
        // A watch fails when it is read (a request handler has answered its headers by then), not when asked for.
        const events = runner.watch(runId)[Symbol.asyncIterator]();
        await expect(events.next()).rejects.toMatchObject({
          info: { category: 'invalid_input', code: 'invalid_run_id' },
        });
      }
      expect(asked).toBe(0);
    } finally {
      await runner.close();
    }
  });
});
