// The soak: 1,000 durable runs over 3 worker processes that are SIGKILLed at random and restarted
// (the restarted worker retries its unfinished run ids, as a caller would), on Redis and on
// PostgreSQL. Every run must end, no journaled step may be called again, no effect may happen twice.
// Some runs compensate (their shipment fails once: a run that began to undo must never ship), and a
// second user re-uses run ids: he must get nothing of them and cause nothing. A fifth of the runs
// make a plain write (`refund`, an API that ignores idempotency keys): one in flight at a kill parks
// its run in doubt; the soak settles those as a person would (no effect: retry; else: do not), and
// no plain write may take effect twice. Another fifth run a `forEach` (3–5 parcels packed, 3 at once,
// each a write honouring its key, undone by unpacking): a kill mid-forEach is followed by another
// process finishing only the unfinished items; a run that fails after it unpacks every parcel once.
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStores } from '../../src/postgres/index.js';
import { redisStores } from '../../src/redis/index.js';
import type { RunStore } from '../../src/stores/run-store.js';
import type { BulkInput, ChainName, OrderInput, WorkerJob } from '../fixtures/durable-worker.js';
import { Ledger, sleep, Worker } from './harness.js';

const RUNS = 1_000;
const WORKERS = 3;
const LEASE_MS = 800;
const KILLS = 12;
const ledger = new Ledger();
const namespaces: string[] = [];
afterAll(async () => {
  for (const ns of namespaces) await ledger.clean(ns);
  await ledger.close();
});

describe.each(['redis', 'postgres'] as const)('soak on %s', (store) => {
  it(`${RUNS} runs, ${WORKERS} processes, ${KILLS} kills, compensating runs, plain writes (runs in doubt settled), forEach runs and a second user: 0 lost, 0 journaled steps called again, 0 duplicate effects (plain writes and forEach items included), 0 effects after an undo, 0 wrong results`, async () => {
    const ns = `ck_soak_${store}_${Math.random().toString(36).slice(2, 10)}`;
    namespaces.push(ns);
    const runs: RunStore =
      store === 'postgres'
        ? postgresStores(ledger.pool, { schema: ns }).runs
        : redisStores(ledger.redis, { prefix: ns }).runs;
    const inputs = new Map<string, OrderInput | BulkInput>();
    const plain = new Set<string>(); // runs of the chain with a plain write
    const bulk = new Map<string, number>(); // runs of the chain with a forEach → their parcels
    for (let i = 0; i < RUNS; i++) {
      if (i % 5 === 4) {
        // 200 runs: 50 whose shipment fails, 50 whose shipment fails once, 100 that complete.
        const parcels = Array.from({ length: 3 + (i % 3) }, (_, k) => k);
        inputs.set(`soak-${i}`, {
          sku: `sku-${i % 37}`,
          failShip: i % 20 === 19,
          failShipOnce: i % 20 === 14,
          parcels,
        });
        bulk.set(`soak-${i}`, parcels.length);
        continue;
      }
      inputs.set(`soak-${i}`, { sku: `sku-${i % 37}`, failShip: i % 20 === 7, failShipOnce: i % 10 === 3 });
      if (i % 5 === 1) plain.add(`soak-${i}`);
    }
    const chainOf = (runId: string): ChainName => (plain.has(runId) ? 'refund' : bulk.has(runId) ? 'bulk' : 'order');
    const ended = new Set<string>();
    const everyWorker: Worker[] = []; // the killed ones too: which processes packed a run's parcels
    const assigned: string[][] = Array.from({ length: WORKERS }, (_, w) =>
      [...inputs.keys()].filter((_, i) => i % WORKERS === w),
    );
    const start = (w: number): Worker => {
      const todo = assigned[w]!.filter((id) => !ended.has(id)).map((runId) => ({
        runId,
        input: inputs.get(runId)!,
        chain: chainOf(runId),
      }));
      const job: WorkerJob = {
        store,
        ns,
        leaseMs: LEASE_MS,
        runs: todo,
        recoverEveryMs: 250,
        concurrency: 8,
        delayMs: 2,
      };
      const worker = new Worker(job);
      worker.exited.then(
        () => undefined,
        () => undefined,
      );
      everyWorker.push(worker);
      return worker;
    };
    const workers = Array.from({ length: WORKERS }, (_, w) => start(w));
    const collect = (): void => {
      for (const w of workers)
        for (const m of w.messages)
          if ((m.type === 'result' && m.code !== 'run_in_progress') || m.type === 'end') ended.add(m.runId!);
    };

    let kills = 0;
    let aimedKills = 0;
    let aimedPackKills = 0;
    const began = Date.now();
    while (kills < KILLS) {
      await sleep(300 + Math.random() * 700);
      collect();
      // Every other kill aims at a worker with a plain write in flight (when one has), so some runs end
      // up in doubt; every fourth, from the second, at one packing a parcel (a forEach in flight).
      const inFlight =
        (what: string) =>
        (k: Worker): boolean =>
          k.messages.filter((m) => m.type === what).length > k.messages.filter((m) => m.type === `${what}-done`).length;
      const aim = kills % 2 === 0 ? 'refund' : kills % 4 === 1 ? 'pack' : undefined;
      let aimed = -1;
      for (let waited = 0; aim !== undefined && aimed < 0 && waited < 2_000; waited += 20) {
        aimed = workers.findIndex(inFlight(aim));
        if (aimed < 0) await sleep(20);
      }
      if (aimed >= 0 && aim === 'refund') aimedKills++;
      if (aimed >= 0 && aim === 'pack') aimedPackKills++;
      const w = aimed >= 0 ? aimed : Math.floor(Math.random() * WORKERS);
      await workers[w]!.kill();
      kills++;
      workers[w] = start(w);
    }
    // No more kills: every run must end, by its worker or by a recoverer (leases expire, polling claims).
    const deadline = Date.now() + 120_000;
    for (;;) {
      collect();
      if (ended.size >= RUNS) break;
      // Workers that finished their queue may have results for run ids that another retried: ask the store.
      const open = [...inputs.keys()].filter((id) => !ended.has(id));
      for (const id of open.slice(0, 50)) {
        const run = await runs.get(id);
        if (run && run.status !== 'running') ended.add(id);
      }
      if (Date.now() > deadline) break;
      await sleep(500);
    }
    await Promise.all(workers.map((w) => w.stop()));

    // Runs in doubt are settled as a person would: the plain write took no effect → retry, else not.
    const settler = new Worker({ store, ns, leaseMs: LEASE_MS, settleInDoubt: true });
    const settled = await settler.waitFor((m) => m.type === 'settled', 120_000);
    await settler.stop();
    const inDoubt = settled.runIds ?? [];

    // A second user re-uses recorded run ids: each must be refused, revealing nothing, calling nothing.
    const taken = [...inputs.keys()]
      .filter((_, i) => i % 10 === 0)
      .map((runId) => ({ runId, input: inputs.get(runId)!, chain: chainOf(runId) }));
    const bob = new Worker({ store, ns, leaseMs: LEASE_MS, runs: taken, concurrency: 4, context: { userId: 'bob' } });
    await bob.waitFor((m) => m.type === 'idle', 60_000);
    await bob.stop();
    const bobResults = bob.messages.filter((m) => m.type === 'result');
    const wrong = bobResults.filter((m) => m.code !== 'run_id_taken').length;
    expect(bobResults).toHaveLength(taken.length);
    expect(wrong).toBe(0);
    expect(await ledger.count(`${ns}:ledger:calls-by:bob`)).toBe(0);

    let lost = 0;
    let failedAsExpected = 0;
    let compensated = 0;
    let notRetried = 0;
    const status = new Map<string, string>();
    for (const [runId, input] of inputs) {
      const run = await runs.get(runId);
      status.set(runId, run?.status ?? 'missing');
      const code = (run?.result as { error?: { code?: string } } | undefined)?.error?.code;
      if (!run || run.status === 'running' || run.status === 'in_doubt') lost++;
      else if (run.status === 'failed' && code === 'outcome_unknown') {
        notRetried++;
        expect(inDoubt, runId).toContain(runId); // only a decision ends a run so
      } else if (run.status === 'failed' && input.failShip) failedAsExpected++;
      else if (run.status === 'failed' && input.failShipOnce)
        compensated++; // unless a kill fell before its failure was recorded: then it ran on
      else expect(run.status, `${runId} ${code ?? ''}`).toBe('completed');
    }
    const effects = await ledger.effects(ns);
    const duplicates = [...effects.values()].filter((n) => n > 1).length;
    const rejournal = await ledger.count(`${ns}:ledger:rejournal`);
    const calls = await ledger.count(`${ns}:ledger:calls`);
    // The figures the README quotes.
    // A compensated run never shipped; a completed one was never undone (no undo by an owner that lost its lease).
    let effectsAfterUndo = 0;
    let undoneCompleted = 0;
    for (const runId of inputs.keys()) {
      if ((effects.get(`${runId}:reserve:undo`) ?? 0) > 0 && (effects.get(`${runId}:ship`) ?? 0) > 0)
        effectsAfterUndo++;
      if (status.get(runId) === 'completed' && (effects.get(`${runId}:reserve:undo`) ?? 0) > 0) undoneCompleted++;
    }
    const plainDuplicates = [...plain].filter((runId) => (effects.get(`${runId}:refund`) ?? 0) > 1).length;
    // forEach runs whose parcels were packed by more than one process: a kill fell in the middle of their forEach.
    const packers = new Map<string, Set<Worker>>();
    for (const w of everyWorker)
      for (const m of w.messages) {
        if (m.type !== 'pack') continue;
        const ws = packers.get(m.runId!) ?? new Set<Worker>();
        packers.set(m.runId!, ws.add(w));
      }
    const split = [...packers.values()].filter((ws) => ws.size > 1).length;
    const bulkFailed = [...bulk.keys()].filter((runId) => status.get(runId) === 'failed').length;
    console.log(
      JSON.stringify({
        soak: store,
        runs: RUNS,
        processes: WORKERS,
        kills,
        lost,
        duplicates,
        rejournal,
        calls,
        failedAsExpected,
        compensated,
        effectsAfterUndo,
        undoneCompleted,
        plainWrites: {
          runs: plain.size,
          aimedKills,
          inDoubt: inDoubt.length,
          settled: settled.statuses?.length,
          notRetried,
          duplicates: plainDuplicates,
        },
        forEach: { runs: bulk.size, aimedKills: aimedPackKills, split, failed: bulkFailed },
        secondUser: { tried: taken.length, wrong },
        seconds: Math.round((Date.now() - began) / 1000),
      }),
    );
    expect(inDoubt.length).toBeGreaterThan(0); // kills did fall on plain writes in flight
    expect(split).toBeGreaterThan(0); // kills did fall in the middle of forEach steps
    expect(bulkFailed).toBeGreaterThanOrEqual(50); // forEach runs did compensate (their shipment failed)
    expect(settled.statuses?.every((st) => st === 'completed' || st.startsWith('failed:'))).toBe(true);
    expect(plainDuplicates).toBe(0);
    expect(effectsAfterUndo).toBe(0);
    expect(undoneCompleted).toBe(0);
    expect(compensated).toBeGreaterThan(0);
    expect(lost).toBe(0);
    expect(duplicates).toBe(0);
    expect(rejournal).toBe(0);
    expect(failedAsExpected + notRetried).toBeGreaterThanOrEqual(RUNS / 20);
    // Every completed run's effects happened: reserve, charge (or refund) and ship once each; every
    // parcel of a forEach run packed once, and unpacked once if the run failed (never otherwise).
    for (const [runId, input] of inputs) {
      const failed = status.get(runId) === 'failed';
      expect(failed || !input.failShip, runId).toBe(true);
      expect(effects.get(`${runId}:reserve`), runId).toBe(1);
      // A plain run makes a refund instead of a charge: once if it completed; a failed one at most once
      // (plainDuplicates), none if a decision ended it before the refund took effect.
      if (plain.has(runId)) {
        if (!failed) expect(effects.get(`${runId}:refund`), runId).toBe(1);
      } else expect(effects.get(`${runId}:charge`), runId).toBe(1);
      expect(effects.get(`${runId}:ship`) ?? 0, runId).toBe(failed ? 0 : 1);
      expect(effects.get(`${runId}:reserve:undo`) ?? 0, runId).toBe(failed ? 1 : 0);
      for (let k = 0; k < (bulk.get(runId) ?? 0); k++) {
        expect(effects.get(`${runId}:packed/${k}/pack`), `${runId} parcel ${k}`).toBe(1);
        expect(effects.get(`${runId}:packed/${k}/pack:undo`) ?? 0, `${runId} parcel ${k}`).toBe(failed ? 1 : 0);
      }
    }
    expect([...effects.keys()].filter((k) => k.includes(':packed/') && !bulk.has(k.split(':')[0]!))).toEqual([]);
  }, 240_000);
});
