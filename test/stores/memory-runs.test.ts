// The in-memory run store keeps the run-store contract (one process: every "peer" is the same store).
import { describe, expect, it } from 'vitest';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import { memoryRunStore } from 'chainkit/testing';
import { entry, record, runEventsContract, runStoreContract, watchAcrossRunnersContract, cancelAcrossRunnersContract, decideAcrossRunnersContract, type RunEventsSetup } from './run-store-contract.js';
import { memoryCheckpointStore } from '../../src/stores/memory.js';

runStoreContract('memory', async () => {
  const idempotency = memoryIdempotencyStore();
  const runs = memoryRunStore({ idempotency });
  return { runs, idempotency, peers: async (n) => Array.from({ length: n }, () => runs) };
});

describe('memoryRunStore', () => {
  it('refuses a journal write that carries an idempotency result when it has no idempotency store', async () => {
    const runs = memoryRunStore();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    await expect(runs.journal(rec.runId, 'A', entry('s', 1), { key: 'k', value: 1 })).rejects.toThrow(/idempotency/);
    expect((await runs.get(rec.runId))!.journal).toEqual([]);
    expect(runs.idempotency).toBeUndefined();
  });

  it('keeps at most maxEnded ended runs, oldest evicted first, and never evicts a run in flight', async () => {
    const runs = memoryRunStore({ maxEnded: 3 });
    const inFlight = record('A', Date.now() + 60_000);
    await runs.create(inFlight, Date.now());
    const ended = [0, 1, 2, 3, 4].map(() => record('A', Date.now() + 60_000));
    for (const r of ended) {
      await runs.create(r, Date.now());
      await runs.finish(r.runId, 'A', 'completed', { n: r.runId }, 60_000);
    }
    const kept = await Promise.all(ended.map(async (r) => (await runs.get(r.runId)) !== undefined));
    expect(kept).toEqual([false, false, true, true, true]);
    expect((await runs.get(inFlight.runId))!.status).toBe('running');
  });

  it('hands out copies: changing what was written or read changes nothing stored', async () => {
    const runs = memoryRunStore();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    const value = { list: [1, 2] };
    await runs.journal(rec.runId, 'A', entry('s', value));
    value.list.push(3);
    const first = (await runs.get(rec.runId))!;
    (first.journal[0]!.value as { list: number[] }).list.push(4);
    (first.input as { match: string }).match = 'changed';
    const second = (await runs.get(rec.runId))!;
    expect(second.journal[0]!.value).toEqual({ list: [1, 2] });
    expect((second.input as { match: string }).match).toBe('groceries');
  });

  it.each([0, 1.5, Infinity])('refuses maxEnded %s', (maxEnded) => {
    expect(() => memoryRunStore({ maxEnded })).toThrow(/maxEnded/);
  });
});

const eventsSetup = async (): Promise<RunEventsSetup> => {
  const runs = memoryRunStore({ maxEventsPerRun: 50 });
  return { runs, peers: async (n) => Array.from({ length: n }, () => runs), maxEventsPerRun: 50 };
};
runEventsContract('memory', eventsSetup);
watchAcrossRunnersContract('memory', eventsSetup);
cancelAcrossRunnersContract('memory', eventsSetup);
decideAcrossRunnersContract('memory', async () => {
  const runs = memoryRunStore();
  const checkpoints = memoryCheckpointStore();
  return { stores: async (count) => Array.from({ length: count }, () => ({ runs, checkpoints })) };
});
