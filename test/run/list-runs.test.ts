// runner.listRuns: the filter is checked, the cursor round-trips, the approvals inbox shows each parked gate's step and question.
import { afterEach, describe, expect, it } from 'vitest';
import {
  createRunner,
  findAndDelete,
  memoryIdempotencyStore,
  memoryRunStore,
  taskChains,
  taskTools,
  type Runner,
} from '../../src/index.js';
import { type RunStore } from '../../src/stores/index.js';
import { createTaskStore, fixtures } from '../../src/testing/index.js';
import { entry, record } from '../stores/run-store-contract.js';

const runners: Runner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});
const make = (runs?: RunStore) => {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({
    invoker: store.invoker,
    tools: [...taskTools],
    chains: [...taskChains],
    secret: 'list-runs-test-secret-0123456789',
    ...(runs && { stores: { runs } }),
  });
  runners.push(runner);
  return runner;
};

describe('runner.listRuns', () => {
  it('is the approvals inbox: each parked run with its gated step and the question asked, newest first', async () => {
    const idempotency = memoryIdempotencyStore();
    const runner = make(memoryRunStore({ idempotency }));
    const context = { userId: fixtures.alice };
    const first = await runner.run(findAndDelete, { match: 'groceries' }, { context });
    const second = await runner.run(findAndDelete, { match: 'dentist' }, { context });
    expect(first.status).toBe('awaiting_confirmation');
    expect(second.status).toBe('awaiting_confirmation');
    if (first.status !== 'awaiting_confirmation' || second.status !== 'awaiting_confirmation') return;
    const inbox = await runner.listRuns({ status: 'awaiting_confirmation' });
    expect(inbox.cursor).toBeUndefined();
    expect(new Set(inbox.runs.map((r) => r.runId))).toEqual(new Set([first.runId, second.runId]));
    const entryOf = (id: string) => inbox.runs.find((r) => r.runId === id)!;
    expect(entryOf(second.runId).awaiting).toEqual({
      step: second.confirmation.step,
      question: second.confirmation.prompt,
    });
    expect(entryOf(first.runId)).toMatchObject({
      chain: findAndDelete.name,
      status: 'awaiting_confirmation',
      awaiting: { step: first.confirmation.step, question: first.confirmation.prompt },
    });
    expect(JSON.stringify(inbox)).not.toContain(first.resumeToken);
    // Approved: it leaves the inbox and is listed as completed.
    await runner.resume(first.resumeToken, { approved: true }, { context });
    expect((await runner.listRuns({ status: 'awaiting_confirmation' })).runs.map((r) => r.runId)).toEqual([
      second.runId,
    ]);
    expect((await runner.listRuns({ status: ['completed', 'failed'] })).runs.map((r) => r.runId)).toEqual([
      first.runId,
    ]);
  });

  it('pages with the cursor it returns, and redacts the question as traces are', async () => {
    const runs = memoryRunStore();
    const t = Date.now();
    for (let i = 0; i < 3; i++) {
      const rec = record('A', t + 60_000, { startedAt: t + i });
      await runs.create(rec, t);
      await runs.journal(rec.runId, 'A', [entry('find', 1)]);
      await runs.finish(
        rec.runId,
        'A',
        'awaiting_confirmation',
        {
          status: 'awaiting_confirmation',
          confirmation: { step: 'reset', tool: 't', prompt: `Reset ${i}? password=hunter2`, expiresAt: 'x' },
        },
        60_000,
      );
    }
    const runner = make(runs);
    const one = await runner.listRuns({ status: 'awaiting_confirmation', limit: 2 });
    expect(one.runs.map((r) => r.awaiting?.question)).toEqual([
      'Reset 2? password=[REDACTED]',
      'Reset 1? password=[REDACTED]',
    ]);
    expect(typeof one.cursor).toBe('string');
    const two = await runner.listRuns({ status: 'awaiting_confirmation', limit: 2, cursor: one.cursor! });
    expect(two.runs.map((r) => r.awaiting?.question)).toEqual(['Reset 0? password=[REDACTED]']);
    expect(two.cursor).toBeUndefined();
    expect((await runner.listRuns({ since: new Date(t + 1), until: t + 2 })).runs.map((r) => r.startedAt)).toEqual([
      t + 1,
    ]);
  });

  it('refuses a malformed cursor or filter with a clear error', async () => {
    const runner = make(memoryRunStore());
    await expect(runner.listRuns({ cursor: 'not-a-cursor' })).rejects.toThrow(/Malformed `cursor`/);
    await expect(runner.listRuns({ cursor: Buffer.from('[1,"x","r"]').toString('base64url') })).rejects.toThrow(
      TypeError,
    );
    await expect(runner.listRuns({ cursor: '' })).rejects.toThrow(/Malformed `cursor`/);
    await expect(runner.listRuns({ status: 'parked' as never })).rejects.toThrow(/`status`/);
    await expect(runner.listRuns({ status: [] })).rejects.toThrow(/`status`/);
    await expect(runner.listRuns({ limit: 0 })).rejects.toThrow(/`limit`/);
    await expect(runner.listRuns({ since: Number.NaN })).rejects.toThrow(/`since`/);
    await expect(runner.listRuns({ chain: '' })).rejects.toThrow(/`chain`/);
  });

  it('rejects without a run store, or with one that cannot list', async () => {
    await expect(make().listRuns()).rejects.toThrow(/needs durable runs/);
    const { listRuns: _, ...unlisted } = memoryRunStore();
    await expect(make(unlisted).listRuns()).rejects.toThrow(/run store that lists runs/);
  });
});
