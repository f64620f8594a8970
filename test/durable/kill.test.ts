// Proof by killing: a worker process is SIGKILLed at each interesting point of a durable run, and
// other processes recover it — on Redis and on PostgreSQL, the real servers. Each run must end once,
// no journaled step may be called again, and no effect may happen twice (effects are counted per
// logical step, applied once per idempotency key as an API honouring Idempotency-Key would). A plain
// write (`refund`, an API that ignores the key) in flight at a kill is never called again blindly:
// the run is parked in doubt until someone decides.
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import type { RunStore } from '../../src/stores/run-store.js';
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
    const exit = await Promise.race([
      doomed.exited,
      sleep(20_000).then(() => {
        throw new Error(`doomed worker did not die: ${JSON.stringify(doomed.messages)} ${doomed.stderr}`);
      }),
    ]);
    expect(exit.signal).toBe('SIGKILL');
    expect(doomed.messages.some((m) => m.type === 'result')).toBe(false); // it died mid-run
    await sleep(LEASE_MS + 100); // its lease expires
    const [a, b] = [new Worker(job(ns, { recoverOnce: true })), new Worker(job(ns, { recoverOnce: true }))];
    const done = await Promise.all([
      a.waitFor((m) => m.type === 'recover-done'),
      b.waitFor((m) => m.type === 'recover-done'),
    ]);
    await Promise.all([a.stop(), b.stop()]);
    const claimed = done.flatMap((d) => d.runIds ?? []);
    const statuses = done.flatMap((d) => d.statuses ?? []);
    return {
      runId,
      claimed,
      statuses,
      effects: await ledger.effects(ns),
      rejournal: await ledger.count(`${ns}:ledger:rejournal`),
    };
  }

  it("after a step's tool returned but before its journal write: the step runs again under the same key, its effect once", async () => {
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
    const doomed = new Worker(
      job(ns, { runs: [{ runId, input: { sku: 'lamp', failShipOnce: true } }], kill: { at: 'finish' } }),
    );
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
    const stalled = new Worker(
      job(ns, { runs: [{ runId, input: { sku: 'desk' } }], stallShipMs: 3 * LEASE_MS + 2_000 }),
    );
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
    const first = new Worker(
      job(ns, { runs: [{ runId, input: { sku: 'pen' } }], kill: { at: 'after-tool', tool: 'reserve' } }),
    );
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

  const runsOf = (ns: string): RunStore =>
    store === 'postgres'
      ? postgresStores(ledger.pool, { schema: ns }).runs
      : redisStores(ledger.redis, { prefix: ns }).runs;

  /** SIGKILLs a worker while the plain write `refund` of its run is in flight (sent, not applied), then two processes recover at once. */
  async function killInPlainWrite(ns: string) {
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const doomed = new Worker(
      job(ns, { runs: [{ runId, input: { sku: 'mug' }, chain: 'refund' }], kill: { at: 'in-refund' } }),
    );
    expect((await doomed.exited).signal).toBe('SIGKILL');
    await sleep(LEASE_MS + 100); // its lease expires
    const [a, b] = [new Worker(job(ns, { recoverOnce: true })), new Worker(job(ns, { recoverOnce: true }))];
    const done = await Promise.all([
      a.waitFor((m) => m.type === 'recover-done'),
      b.waitFor((m) => m.type === 'recover-done'),
    ]);
    await Promise.all([a.stop(), b.stop()]);
    return { runId, claimed: done.flatMap((d) => d.runIds ?? []), statuses: done.flatMap((d) => d.statuses ?? []) };
  }

  /** Two processes decide the same run at once; returns their answers. */
  async function decideTwice(ns: string, runId: string, retry: boolean) {
    const deciders = [
      new Worker(job(ns, { decide: [{ runId, retry, by: 'ops:alice' }] })),
      new Worker(job(ns, { decide: [{ runId, retry, by: 'ops:bob' }] })),
    ];
    const answers = await Promise.all(deciders.map((d) => d.waitFor((m) => m.type === 'decided')));
    await Promise.all(deciders.map((d) => d.stop()));
    return answers;
  }

  it('SIGKILL with a plain write in flight: two recoverers at once park the run in_doubt and never call the write; decide(retry: true) from two processes at once calls it exactly once more, under the same key, and the run completes', async () => {
    const ns = newNs();
    const r = await killInPlainWrite(ns);
    expect(r.claimed).toEqual([r.runId]); // claimed once
    expect(r.statuses).toEqual(['in_doubt']);
    expect(await ledger.count(`${ns}:ledger:refundcalls:${r.runId}`)).toBe(1); // not called again by recovery
    const parked = await runsOf(ns).get(r.runId);
    expect(parked?.status).toBe('in_doubt');
    const started = parked?.journal.find((e) => e.started);
    expect(started).toMatchObject({
      step: 'refund',
      started: { tool: 'refund', input: { amount: 10, reservation: `${r.runId}:reserve`, api_key: '[REDACTED]' } },
    });
    expect(JSON.stringify(parked)).not.toContain('sk-live-do-not-show');
    await sleep(LEASE_MS + 100);
    const again = new Worker(job(ns, { recoverOnce: true })); // a parked run is not claimed again
    expect((await again.waitFor((m) => m.type === 'recover-done')).runIds).toEqual([]);
    await again.stop();

    const answers = await decideTwice(ns, r.runId, true);
    expect(answers.map((a) => a.status).sort()).toEqual(['completed', 'not_parked']); // exactly once across processes
    expect(await ledger.count(`${ns}:ledger:refundcalls:${r.runId}`)).toBe(2); // once more, no more
    expect(await ledger.redis.lrange(`${ns}:ledger:refundkeys:${r.runId}`, 0, -1)).toEqual([
      `${r.runId}:refund`,
      `${r.runId}:refund`,
    ]); // the same key
    const effects = await ledger.effects(ns);
    expect(effects.get(`${r.runId}:refund`)).toBe(1);
    expect(effects.get(`${r.runId}:ship`)).toBe(1);
    expect(effects.has(`${r.runId}:reserve:undo`)).toBe(false);
    expect(await ledger.count(`${ns}:ledger:rejournal`)).toBe(0);
    const ended = await runsOf(ns).get(r.runId);
    expect(ended?.status).toBe('completed');
    expect(ended?.journal.find((e) => e.decision)?.decision).toMatchObject({
      retry: true,
      by: expect.stringMatching(/^ops:(alice|bob)$/),
    });
  }, 60_000);

  it('SIGKILL with a plain write in flight, decide(retry: false): the run fails outcome_unknown, the write and the steps after it are not called, the steps before it are undone', async () => {
    const ns = newNs();
    const r = await killInPlainWrite(ns);
    expect(r.statuses).toEqual(['in_doubt']);
    const answers = await decideTwice(ns, r.runId, false);
    expect(answers.map((a) => `${a.status}:${a.code ?? ''}`).sort()).toEqual(['failed:outcome_unknown', 'not_parked:']);
    expect(await ledger.count(`${ns}:ledger:refundcalls:${r.runId}`)).toBe(1);
    const effects = await ledger.effects(ns);
    expect(effects.has(`${r.runId}:refund`)).toBe(false);
    expect(effects.has(`${r.runId}:ship`)).toBe(false);
    expect(effects.get(`${r.runId}:reserve:undo`)).toBe(1);
    const ended = await runsOf(ns).get(r.runId);
    expect(ended?.status).toBe('failed');
    expect((ended?.result as { error: { code: string } }).error.code).toBe('outcome_unknown');
  }, 60_000);

  it('an owner whose event loop stalls past its lease inside a plain write: another process parks the run in doubt (the write not called again), the stalled owner stops lease_lost and records nothing', async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const heir = new Worker(job(ns, { recoverEveryMs: 100 }));
    await heir.waitFor((m) => m.type === 'idle');
    const stalled = new Worker(
      job(ns, { runs: [{ runId, input: { sku: 'vase' }, chain: 'refund' }], stallRefundMs: 3 * LEASE_MS + 2_000 }),
    );
    const late = await stalled.waitFor((m) => m.type === 'result');
    await heir.waitFor((m) => m.type === 'end' && m.runId === runId);
    await Promise.all([stalled.stop(), heir.stop()]);
    expect(late.code).toBe('lease_lost');
    expect(heir.messages.find((m) => m.type === 'end' && m.runId === runId)?.status).toBe('in_doubt');
    expect(await ledger.count(`${ns}:ledger:refundcalls:${runId}`)).toBe(1);
    const effects = await ledger.effects(ns);
    expect(effects.get(`${runId}:refund`)).toBe(1); // the stalled owner's write did take effect: a person decides
    expect(effects.has(`${runId}:ship`)).toBe(false);
    const run = await runsOf(ns).get(runId);
    expect(run?.status).toBe('in_doubt');
    expect(run?.journal.some((e) => e.step === 'refund' && !e.started)).toBe(false); // the stalled owner recorded nothing after losing its lease
  }, 60_000);

  it("a run id is the caller's retry handle: an ended run returns its recorded result and calls no tool", async () => {
    const ns = newNs();
    const runId = `run-${Math.random().toString(36).slice(2)}`;
    const w = new Worker(
      job(ns, {
        runs: [
          { runId, input: { sku: 'cup' } },
          { runId, input: { sku: 'cup' } },
        ],
      }),
    );
    await w.waitFor((m) => m.type === 'idle');
    await w.stop();
    const results = w.messages.filter((m) => m.type === 'result');
    expect(results.map((m) => m.status)).toEqual(['completed', 'completed']);
    expect(await ledger.count(`${ns}:ledger:calls`)).toBe(4); // lookup, reserve, charge, ship: once
  }, 60_000);
});
