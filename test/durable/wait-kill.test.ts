// A sleeping run outlives the process that parked it (API.md §12, issue 21): a worker process runs a
// chain that sleeps 2 s between its reservation and its charge; the run parks `waiting` and the
// worker is SIGKILLed; the recovery poller of another process wakes it when its time has come. On
// Redis and on PostgreSQL, the real servers; the ledger (in Redis) counts each step's calls and
// notes when each was called. wait.test.ts covers the wake-up by another runner in one process,
// on a clock the test moves; here the owner dies, and the clock is the real one.
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import type { RunStore } from '../../src/stores/run-store.js';
import type { WorkerJob } from '../fixtures/durable-worker.js';
import { Ledger, Worker } from './harness.js';

const LEASE_MS = 600;
const ledger = new Ledger();
const namespaces: string[] = [];
afterAll(async () => {
  for (const ns of namespaces) await ledger.clean(ns);
  await ledger.close();
});

describe.each(['redis', 'postgres'] as const)('a sleeping run whose process died, on %s', (store) => {
  const job = (ns: string, extra: Partial<WorkerJob>): WorkerJob => ({
    store,
    ns,
    leaseMs: LEASE_MS,
    recoverEveryMs: 200,
    timeSteps: true,
    ...extra,
  });

  it('a run sleeping 2 s is woken on another process after its own process was SIGKILLed: it completes 2 s or more after it parked, the write after the sleep happens once, the steps before it are not called again', async () => {
    const ns = `ck_waitkill_${store}_${Math.random().toString(36).slice(2, 10)}`;
    namespaces.push(ns);
    const runs: RunStore =
      store === 'postgres'
        ? postgresStores(ledger.pool, { schema: ns }).runs
        : redisStores(ledger.redis, { prefix: ns }).runs;
    const runId = `nap-${Math.random().toString(36).slice(2)}`;
    const at = async (step: string): Promise<number> => ledger.count(`${ns}:ledger:at:${runId}:${step}`);
    const calls = async (step: string): Promise<number> => ledger.count(`${ns}:ledger:stepcalls:${runId}:${step}`);

    // The owner (with a recovery poller of its own, as every instance has) parks the run, then dies.
    const owner = new Worker(job(ns, { runs: [{ runId, input: { sku: 'tea' }, chain: 'nap' }] }));
    const parked = await owner.waitFor((m) => m.type === 'result' && m.runId === runId);
    expect(parked.status).toBe('waiting');
    expect((await owner.kill()) as { signal: string }).toMatchObject({ signal: 'SIGKILL' });
    const until = parked.until!;
    // The sleep began after the reservation was called: the run is due 2 s or more after that.
    expect(until - (await at('reserve'))).toBeGreaterThanOrEqual(2_000);
    const asleep = await runs.get(runId);
    expect(asleep?.status).toBe('waiting');
    expect(asleep?.journal.map((e) => e.step)).toEqual(expect.arrayContaining(['lookup', 'reserve']));
    expect(await calls('charge')).toBe(0); // its owner died before the wake-up
    expect(owner.messages.some((m) => m.type === 'end' && m.runId === runId && m.status === 'completed')).toBe(false);

    // Another process, started after the death, wakes it with its recovery poller when it is due.
    const heir = new Worker(job(ns, {}));
    // (A wake-up is not a takeover: no `run:recovered`, the parked run had no owner; its `run:end` comes from the heir.)
    const end = await heir.waitFor((m) => m.type === 'end' && m.runId === runId && m.status !== 'waiting', 20_000);
    await heir.stop();
    expect(end.status).toBe('completed');

    const chargedAt = await at('charge');
    expect(chargedAt).toBeGreaterThanOrEqual(until); // not woken before its time
    const done = await runs.get(runId);
    expect(done?.status).toBe('completed');
    const endedAt = Date.parse((done?.result as { trace: { endedAt: string } }).trace.endedAt);
    expect(endedAt - (until - 2_000)).toBeGreaterThanOrEqual(2_000); // completed 2 s or more after it parked
    expect(endedAt).toBeGreaterThanOrEqual(chargedAt);

    // The write after the sleep happened once; the steps before it were not called again.
    expect(await calls('charge')).toBe(1);
    expect(await calls('reserve')).toBe(1);
    expect(await calls('lookup')).toBe(1);
    const effects = await ledger.effects(ns);
    expect(effects.get(`${runId}:charge`)).toBe(1);
    expect(effects.get(`${runId}:reserve`)).toBe(1);
    expect(await ledger.count(`${ns}:ledger:rejournal`)).toBe(0);
  }, 60_000);
});
