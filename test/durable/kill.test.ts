// Proof by killing: a worker process is SIGKILLed at each interesting point of a durable run, and
// other processes recover it — on Redis and on PostgreSQL, the real servers. Each run must end once,
// no journaled step may be called again, and no effect may happen twice (effects are counted per
// logical step, applied once per idempotency key as an API honouring Idempotency-Key would).
import { afterAll, describe, expect, it } from 'vitest';
import { Ledger, sleep, Worker } from './harness.js';
import type { WorkerJob } from '../fixtures/durable-worker.js';

const LEASE_MS = 600;
const ledger = new Ledger();
const namespaces: string[] = [];
afterAll(async () => {
  for (const ns of namespaces) await ledger.clean(ns);
  await ledger.close();
});

describe.each(['redis', 'postgres'] as const)('durable runs survive SIGKILL on %s', (store) => {
  const newNs = (): string => {
    const ns = `ck_kill_${store}_${Math.random().toString(36).slice(2, 10)}`;
    namespaces.push(ns);
    return ns;
  };
  const job = (ns: string, extra: Partial<WorkerJob>): WorkerJob => ({ store, ns, leaseMs: LEASE_MS, ...extra });

  /** Kills a worker at `kill` on one run, then two recoverers race for it; returns what they saw. */
  async function killThenRecover(ns: string, kill: WorkerJob['kill'], failShip = false) {
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const doomed = new Worker(job(ns, { runs: [{ runId, input: { sku: 'book', failShip } }], kill }));
    const exit = await Promise.race([doomed.exited, sleep(20_000).then(() => { throw new Error(`doomed worker did not die: ${JSON.stringify(doomed.messages)} ${doomed.stderr}`); })]);
    expect(exit.signal).toBe('SIGKILL');
    expect(doomed.messages.some((m) => m.type === 'result')).toBe(false); // it died mid-run
    await sleep(LEASE_MS + 100); // its lease expires
    const [a, b] = [new Worker(job(ns, { recoverOnce: true })), new Worker(job(ns, { recoverOnce: true }))];
    const done = await Promise.all([a.waitFor((m) => m.type === 'recover-done'), b.waitFor((m) => m.type === 'recover-done')]);
    await Promise.all([a.stop(), b.stop()]);
    const claimed = done.flatMap((d) => d.runIds ?? []);
    const statuses = done.flatMap((d) => d.statuses ?? []);
    return { runId, claimed, statuses, effects: await ledger.effects(ns), rejournal: await ledger.count(`${ns}:ledger:rejournal`) };
  }

  it('after a step\'s tool returned but before its journal write: the step runs again under the same key, its effect once', async () => {
    const ns = newNs();
    const r = await killThenRecover(ns, { at: 'after-tool', tool: 'charge' });
    expect(r.claimed).toEqual([r.runId]); // two recoverers at once: claimed once
    expect(r.statuses).toEqual(['completed']);
    expect(r.effects.get(`${r.runId}:charge`)).toBe(1);
    expect(r.effects.get(`${r.runId}:reserve`)).toBe(1);
    expect(r.effects.get(`${r.runId}:ship`)).toBe(1);
    expect(r.rejournal).toBe(0);
  }, 60_000);

  it('between two steps: the journaled steps are not called again', async () => {
    const ns = newNs();
    const r = await killThenRecover(ns, { at: 'step-start', step: 'charge' });
    expect(r.claimed).toEqual([r.runId]);
    expect(r.statuses).toEqual(['completed']);
    expect([...r.effects.values()].every((n) => n === 1)).toBe(true);
    expect(r.effects.get(`${r.runId}:charge`)).toBe(1);
    expect(r.rejournal).toBe(0);
  }, 60_000);

  it('during compensation: the recovered run compensates, the undo takes effect once', async () => {
    const ns = newNs();
    const r = await killThenRecover(ns, { at: 'after-tool', tool: 'release' }, true);
    expect(r.claimed).toEqual([r.runId]);
    expect(r.statuses).toEqual(['failed']);
    expect(r.effects.get(`${r.runId}:reserve`)).toBe(1);
    expect(r.effects.get(`${r.runId}:reserve:undo`)).toBe(1);
    expect(r.effects.has(`${r.runId}:ship`)).toBe(false);
    expect(r.rejournal).toBe(0);
  }, 60_000);

  it('killed after its undo was recorded, as the end is written: recovery never calls the failed step again and ends the run failed', async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const doomed = new Worker(job(ns, { runs: [{ runId, input: { sku: 'lamp', failShipOnce: true } }], kill: { at: 'finish' } }));
    expect((await doomed.exited).signal).toBe('SIGKILL');
    await sleep(LEASE_MS + 100);
    const heir = new Worker(job(ns, { recoverOnce: true }));
    const done = await heir.waitFor((m) => m.type === 'recover-done');
    await heir.stop();
    expect(done.runIds).toEqual([runId]);
    expect(done.statuses).toEqual(['failed']); // never shipped with its reservation released
    const effects = await ledger.effects(ns);
    expect(effects.get(`${runId}:reserve:undo`)).toBe(1);
    expect(effects.has(`${runId}:ship`)).toBe(false);
    expect(await ledger.count(`${ns}:ledger:shipcalls:${runId}`)).toBe(1);
    expect(await ledger.count(`${ns}:ledger:rejournal`)).toBe(0);
  }, 60_000);

  it('an owner whose event loop stalls past its lease undoes nothing after another process completed the run', async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const heir = new Worker(job(ns, { recoverEveryMs: 100 }));
    await heir.waitFor((m) => m.type === 'idle');
    const stalled = new Worker(job(ns, { runs: [{ runId, input: { sku: 'desk' } }], stallShipMs: 3 * LEASE_MS + 2_000 }));
    const late = await stalled.waitFor((m) => m.type === 'result');
    await heir.waitFor((m) => m.type === 'end' && m.runId === runId);
    await Promise.all([stalled.stop(), heir.stop()]);
    expect(late.code).toBe('lease_lost');
    expect(heir.messages.find((m) => m.type === 'end')?.status).toBe('completed');
    const effects = await ledger.effects(ns);
    expect(effects.get(`${runId}:ship`)).toBe(1);
    expect(effects.has(`${runId}:reserve:undo`)).toBe(false); // the stalled owner released nothing
  }, 60_000);

  it('while another process recovers: killed again mid-recovery, a third finishes it once', async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const first = new Worker(job(ns, { runs: [{ runId, input: { sku: 'pen' } }], kill: { at: 'after-tool', tool: 'reserve' } }));
    await first.exited;
    await sleep(LEASE_MS + 100);
    const second = new Worker(job(ns, { recoverOnce: true, kill: { at: 'after-tool', tool: 'charge' } }));
    expect((await second.exited).signal).toBe('SIGKILL');
    await sleep(LEASE_MS + 100);
    const third = new Worker(job(ns, { recoverOnce: true }));
    const done = await third.waitFor((m) => m.type === 'recover-done');
    await third.stop();
    expect(done.runIds).toEqual([runId]);
    expect(done.statuses).toEqual(['completed']);
    const effects = await ledger.effects(ns);
    expect(effects.get(`${runId}:reserve`)).toBe(1);
    expect(effects.get(`${runId}:charge`)).toBe(1);
    expect(effects.get(`${runId}:ship`)).toBe(1);
    expect(await ledger.count(`${ns}:ledger:rejournal`)).toBe(0);
  }, 60_000);

  it('a run id is the caller\'s retry handle: an ended run returns its recorded result and calls no tool', async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const w = new Worker(job(ns, { runs: [{ runId, input: { sku: 'cup' } }, { runId, input: { sku: 'cup' } }] }));
    await w.waitFor((m) => m.type === 'idle');
    await w.stop();
    const results = w.messages.filter((m) => m.type === 'result');
    expect(results.map((m) => m.status)).toEqual(['completed', 'completed']);
    expect(await ledger.count(`${ns}:ledger:calls`)).toBe(4); // lookup, reserve, charge, ship: once
  }, 60_000);
});
