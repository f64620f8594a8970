import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  findAndDelete,
  memoryCheckpointStore,
  ref,
  taskTools,
  type RunResult,
} from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { remove } from '../helpers.js';

const alice = { context: { userId: fixtures.alice } };

function setup(opts: { now?: () => number; confirmationTtlMs?: number } = {}) {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker, tools: [...taskTools], chains: [findAndDelete], ...opts });
  return { store, runner };
}

async function awaiting(runner: ReturnType<typeof setup>['runner']) {
  const r = await runner.run(findAndDelete, { match: 'groceries' }, alice);
  if (r.status !== 'awaiting_confirmation') throw new Error(`expected a gate, got ${r.status}`);
  return r;
}

const codeOf = (r: RunResult) => (r.status === 'failed' ? `${r.error.category}/${r.error.code}` : r.status);

describe('confirmation gates', () => {
  it('stops before the destructive step and resumes once approved', async () => {
    const { store, runner } = setup();
    const r = await awaiting(runner);
    expect(r.confirmation).toMatchObject({
      step: 'delete',
      tool: 'delete_task',
      prompt: "Are you sure you want to delete 'Buy groceries'?",
    });
    expect(r.confirmation.details).toMatchObject({ title: 'Buy groceries' });
    expect(r.trace.steps.map((s) => s.status)).toEqual(['success', 'success', 'awaiting_confirmation']);
    expect(store.callCount.delete_task).toBeUndefined();
    expect(JSON.parse(JSON.stringify(r.resumeToken))).toBe(r.resumeToken);

    const done = await runner.resume(r.resumeToken, { approved: true }, alice);
    expect(done.status === 'completed' && done.output).toMatchObject({ title: 'Buy groceries', deleted: true });
    expect(done.runId).toBe(r.runId);
    expect(done.trace.steps.map((s) => [s.id, s.status])).toEqual([
      ['find', 'success'],
      ['target', 'success'],
      ['delete', 'success'],
    ]);
    expect(store.tasks(fixtures.alice).map((t) => t.title)).not.toContain('Buy groceries');
  });

  it('declines without calling the tool', async () => {
    const { store, runner } = setup();
    const r = await awaiting(runner);
    const d = await runner.resume(r.resumeToken, { approved: false }, alice);
    expect(d).toMatchObject({ status: 'declined', step: 'delete' });
    expect(d.trace.steps.at(-1)).toMatchObject({ id: 'delete', status: 'declined' });
    expect(store.callCount.delete_task).toBeUndefined();
    expect(codeOf(await runner.resume(r.resumeToken, { approved: true }, alice))).toBe('confirmation/already_used');
  });

  it('resumes at most once under concurrent resumes', async () => {
    const { store, runner } = setup();
    const r = await awaiting(runner);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => runner.resume(r.resumeToken, { approved: true }, alice)),
    );
    expect(results.map(codeOf).sort()).toEqual(['completed', ...Array(4).fill('confirmation/already_used')].sort());
    expect(store.callCount.delete_task).toBe(1);
  });

  it('refuses tampered, unknown and foreign tokens as invalid_token', async () => {
    const { runner } = setup();
    const r = await awaiting(runner);
    const [payload, sig] = r.resumeToken.split('.');
    const forged = Buffer.from(JSON.stringify({ i: 'x', e: Date.now() + 1e9 })).toString('base64url');
    for (const token of [`${payload}.${sig!.slice(0, -2)}xx`, `${forged}.${sig}`, 'garbage', '', `${payload}`]) {
      expect(codeOf(await runner.resume(token, { approved: true }, alice))).toBe('confirmation/invalid_token');
    }
    const other = setup().runner; // different secret
    expect(codeOf(await other.resume(r.resumeToken, { approved: true }, alice))).toBe('confirmation/invalid_token');
    // The real token still works after all that.
    expect((await runner.resume(r.resumeToken, { approved: true }, alice)).status).toBe('completed');
  });

  it('refuses an expired token', async () => {
    let t = Date.now();
    const { runner, store } = setup({ now: () => t, confirmationTtlMs: 60_000 });
    const r = await awaiting(runner);
    t += 60_001;
    expect(codeOf(await runner.resume(r.resumeToken, { approved: true }, alice))).toBe('confirmation/expired');
    expect(store.callCount.delete_task).toBeUndefined();
  });

  it('refuses a different trusted context, and the rightful user can still resume', async () => {
    const { runner, store } = setup();
    const r = await awaiting(runner);
    expect(codeOf(await runner.resume(r.resumeToken, { approved: true }, { context: { userId: fixtures.bob } }))).toBe(
      'confirmation/context_mismatch',
    );
    expect(codeOf(await runner.resume(r.resumeToken, { approved: true }))).toBe('confirmation/context_mismatch');
    expect(store.callCount.delete_task).toBeUndefined();
    expect((await runner.resume(r.resumeToken, { approved: true }, alice)).status).toBe('completed');
  });

  it('refuses when the chain changed or is unknown to the resuming runner', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const secret = 'a-shared-secret-of-enough-length';
    const checkpoints = memoryCheckpointStore();
    const a = createRunner({ invoker: store.invoker, secret, stores: { checkpoints } });
    const r = await awaiting(a);
    const changed = defineChain({
      name: findAndDelete.name,
      input: findAndDelete.input,
      context: findAndDelete.context!,
      timeoutMs: findAndDelete.timeoutMs,
      steps: findAndDelete.steps.map((s) => (s.id === 'delete' ? { ...s, confirm: { prompt: 'Delete it?' } } : s)),
    });
    expect(codeOf(await a.resume(r.resumeToken, { approved: true }, { ...alice, chain: changed }))).toBe(
      'confirmation/chain_changed',
    );
    const b = createRunner({ invoker: store.invoker, secret, stores: { checkpoints } }); // knows no chains
    expect(codeOf(await b.resume(r.resumeToken, { approved: true }, alice))).toBe('confirmation/unknown_chain');
    // Neither refusal burnt the token: the original runner still resumes it, once.
    expect((await a.resume(r.resumeToken, { approved: true }, alice)).status).toBe('completed');
    expect(store.callCount.delete_task).toBe(1);
  });

  it('answers gates in-process with the confirm callback', async () => {
    const { runner, store } = setup();
    const confirm = vi.fn(async () => true);
    const r = await runner.run(findAndDelete, { match: 'milk' }, { ...alice, confirm });
    expect(r.status).toBe('completed');
    expect(confirm).toHaveBeenCalledWith(
      expect.objectContaining({ step: 'delete', prompt: "Are you sure you want to delete 'Buy milk'?" }),
    );
    const no = await runner.run(findAndDelete, { match: 'dentist' }, { ...alice, confirm: () => false });
    expect(no).toMatchObject({ status: 'declined', step: 'delete' });
    expect(store.callCount.delete_task).toBe(1);
  });

  it('checkpoints are plain JSON', async () => {
    const saved: unknown[] = [];
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({
      invoker: store.invoker,
      stores: {
        checkpoints: {
          save: async (c) => {
            saved.push(c);
          },
          peek: async () => ({ status: 'missing' }),
          take: async () => ({ status: 'missing' }),
        },
      },
    });
    await runner.run(findAndDelete, { match: 'groceries' }, alice);
    expect(JSON.parse(JSON.stringify(saved[0]))).toEqual(saved[0]);
  });

  it('a waived destructive step (confirm: false) runs without a gate', async () => {
    const chain = defineChain({
      name: 'rm',
      input: z.object({ id: z.uuid() }),
      steps: [{ id: 'rm', tool: remove, input: { id: ref('input', 'id') }, confirm: false }],
    });
    const runner = createRunner({ invoker: async () => ({ ok: true }) });
    expect((await runner.run(chain, { id: fixtures.alice })).status).toBe('completed');
  });
});
