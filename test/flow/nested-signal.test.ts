// signals to a waitFor inside a sub-chain — the schema checked must be that step's own.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, memoryRunStore, SignalRefused, type Runner } from 'chainkit';

const noop = defineTool({ name: 'noop', description: 'n', input: z.object({}), output: z.object({}), effect: 'read' });
const open: Runner[] = [];
afterEach(async () => {
  for (const r of open.splice(0)) await r.close();
});

describe('a waitFor in a branch case', () => {
  const a = chain('rs_a', { input: z.object({ id: z.string() }) })
    .waitFor('review', { signal: 'review', schema: z.object({ ok: z.boolean() }) })
    .build();
  const b = chain('rs_b', { input: z.object({ id: z.string() }) })
    .waitFor('review', { signal: 'review', schema: z.object({ score: z.number() }) })
    .build();
  const c = chain('rs_branch', { input: z.object({ how: z.enum(['a', 'b']), id: z.string() }), timeoutMs: 60_000 })
    .branch('act', (ref) => ({
      on: ref('input', 'how'),
      cases: { a: { chain: a, input: { id: ref('input', 'id') } }, b: { chain: b, input: { id: ref('input', 'id') } } },
    }))
    .build();

  function runner() {
    const r = createRunner({
      invoker: functionInvoker([noop], { noop: () => ({}) }),
      chains: [c],
      stores: { runs: memoryRunStore() },
    });
    open.push(r);
    return r;
  }

  it('a wrong signal name leaves it waiting', async () => {
    const r = runner();
    const parked = await r.run(c, { how: 'b', id: 'x' }, { runId: 'rs-0' });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'act/review', signal: 'review' } });
    expect(await r.signal('rs-0', 'reviewed', { score: 1 })).toBe('not_waiting');
    expect((await r.getRun('rs-0'))?.status).toBe('waiting');
  });

  it('case b waits: its own schema checks the payload (not case a’s)', async () => {
    const r = runner();
    const parked = await r.run(c, { how: 'b', id: 'x' }, { runId: 'rs-1' });
    expect(parked).toMatchObject({ status: 'waiting', waiting: { step: 'act/review' } });
    // Case a's schema would take this; case b's refuses it.
    await expect(r.signal('rs-1', 'review', { ok: true })).rejects.toBeInstanceOf(SignalRefused);
    const done = await r.signal('rs-1', 'review', { score: 7 });
    expect(typeof done !== 'string' && done.status).toBe('completed');
  });
});
