// The memory idempotency store lets a recovered durable run take over the claim its dead owner left,
// and nothing else: not another run's claim, not a claim without a run, not a kept result.
import { describe, expect, it } from 'vitest';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import { takeOverContract } from './run-store-contract.js';

describe('memory idempotency take-over', () => {
  it('a new owner of the same run takes over a pending claim at once; waiters get its outcome', async () => {
    const store = memoryIdempotencyStore();
    expect(store.begin('k', { runId: 'r1', owner: 'dead' })).toEqual({ status: 'new' });
    const waiter = store.begin('k');
    expect(waiter).toMatchObject({ status: 'pending' });
    expect(store.begin('k', { runId: 'r1', owner: 'alive', takeOver: true })).toEqual({ status: 'new' });
    store.complete('k', { ok: 1 });
    await expect((waiter as { settled: Promise<unknown> }).settled).resolves.toEqual({ ok: 1 });
    expect(store.begin('k', { runId: 'r1', owner: 'third', takeOver: true })).toEqual({
      status: 'done',
      at: expect.any(Number),
      value: { ok: 1 },
    });
  });

  it("never takes over another run's claim, a claim without a run, or without takeOver", () => {
    const store = memoryIdempotencyStore();
    store.begin('a', { runId: 'r1', owner: 'o1' });
    expect(store.begin('a', { runId: 'r2', owner: 'o2', takeOver: true })).toMatchObject({ status: 'pending' });
    expect(store.begin('a', { runId: 'r1', owner: 'o2' })).toMatchObject({ status: 'pending' });
    store.begin('b');
    expect(store.begin('b', { runId: 'r1', owner: 'o2', takeOver: true })).toMatchObject({ status: 'pending' });
  });
});

takeOverContract('memory', async () => memoryIdempotencyStore());
