// The in-memory run store keeps the run-store contract (one process: every "peer" is the same store).
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, functionInvoker, ref } from '../../src/index.js';
import { memoryIdempotencyStore } from '../../src/stores/memory.js';
import { memoryRunStore } from 'chainkit/testing';
import {
  entry,
  record,
  runEventsContract,
  runStoreContract,
  watchAcrossRunnersContract,
  cancelAcrossRunnersContract,
  decideAcrossRunnersContract,
  type RunEventsSetup,
} from './run-store-contract.js';
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
    await expect(runs.journal(rec.runId, 'A', [entry('s', 1)], { key: 'k', value: 1 })).rejects.toThrow(/idempotency/);
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

  it('watches of runs it never saw do not push the events of ended runs out (they are capped apart)', async () => {
    const runs = memoryRunStore({ maxEnded: 2 });
    const log = runs.events!;
    const kept = record('A', Date.now() + 60_000);
    await runs.create(kept, Date.now());
    await log.append(kept.runId, [JSON.stringify({ at: 1, type: 'run:start', data: {} })], 60_000);
    const stop = new AbortController();
    // Made-up ids, each watched (a waiter each), more than the cap.
    const waits = Array.from({ length: 5 }, (_, i) => log.wait(`made-up-${i}`, 0, 60_000, stop.signal));
    expect(await log.read(kept.runId, 0, 10)).toHaveLength(1);
    stop.abort();
    await Promise.all(waits);
  });

  it('never evicts a run parked in doubt or waiting to make room: only a decision or a signal ends it', async () => {
    const runs = memoryRunStore({ maxEnded: 2 });
    const doubt = record('A', Date.now() + 60_000);
    await runs.create(doubt, Date.now());
    await runs.finish(doubt.runId, 'A', 'in_doubt', { status: 'in_doubt' }, Infinity);
    const waiting = record('A', Date.now() + 60_000);
    await runs.create(waiting, Date.now());
    await runs.parkWaiting!(waiting.runId, 'A', { status: 'waiting' }, null);
    for (const r of [0, 1, 2, 3].map(() => record('A', Date.now() + 60_000))) {
      await runs.create(r, Date.now());
      await runs.finish(r.runId, 'A', 'completed', { n: r.runId }, 60_000);
    }
    expect((await runs.get(doubt.runId))?.status).toBe('in_doubt');
    expect((await runs.get(waiting.runId))?.status).toBe('waiting');
  });

  it('hands out copies: changing what was written or read changes nothing stored', async () => {
    const runs = memoryRunStore();
    const rec = record('A', Date.now() + 60_000);
    await runs.create(rec, Date.now());
    const value = { list: [1, 2] };
    await runs.journal(rec.runId, 'A', [entry('s', value)]);
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

describe('runner.decide and a declined resume with the memory run store', () => {
  const send = defineTool({
    name: 'send_it',
    description: 's',
    input: z.object({ n: z.number() }),
    output: z.object({ n: z.number() }),
    effect: 'write',
    idempotent: true,
  });
  const gate = defineChain({
    name: 'gate-only',
    input: z.object({ n: z.number() }),
    steps: [{ id: 'send', tool: send, input: { n: ref('input', 'n') }, confirm: { prompt: 'Send?' } }],
  });
  const invoker = functionInvoker([send], { send_it: async ({ n }) => ({ n }) });

  it('a resume declined by the token holder is recorded declined in the run store', async () => {
    const runner = createRunner({ invoker, chains: [gate], stores: { runs: memoryRunStore() } });
    const r = await runner.run(gate, { n: 1 }, { runId: 'declined-by-holder' });
    expect(r.status).toBe('awaiting_confirmation');
    const declined = await runner.resume(r.status === 'awaiting_confirmation' ? r.resumeToken : '', {
      approved: false,
    });
    expect(declined.status).toBe('declined');
    expect((await runner.getRun('declined-by-holder'))?.status).toBe('declined');
    await runner.close();
  });

  it('without a run store, decide throws: there is no record to find the run by its id', async () => {
    const runner = createRunner({ invoker, chains: [gate] });
    await expect(runner.decide('any', { approved: true, by: 'ops' })).rejects.toThrow(/needs durable runs/);
    await expect(runner.decide('any', { approved: true, by: 'ops' })).rejects.toMatchObject({ code: 'no_run_store' });
    await runner.close();
  });
});
