// The contract every run store keeps (memory, Redis, Postgres), run by each store's test file.
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createRunner,
  defineChain,
  defineTool,
  functionInvoker,
  ref,
  type RunEvent,
  type Runner,
} from '../../src/index.js';
import type { CheckpointStore, IdempotencyClaim, IdempotencyStore } from '../../src/stores/types.js';
import type { RunContextMatch } from '../../src/stores/run-listing.js';
import type { JournalEntry, RunRecord, RunStore, StoredRun } from '../../src/stores/run-store.js';
import type { RunListQuery, RunStatus } from '../../src/stores/run-listing.js';
import { RUN_STATUSES } from '../../src/stores/run-list.js';
import type { IdempotencyBeginOptions } from '../../src/stores/types.js';
import { CheckpointEncodeError } from '../../src/stores/serialize.js';
import { encodeRunValue } from '../../src/stores/run-codec.js';

/** A run store on a store of its own (nothing left by other tests), with the idempotency store its journal writes into. */
export interface RunStoreSetup {
  runs: RunStore;
  idempotency: IdempotencyStore;
  /** `n` more run stores on the same data over separate connections, as other processes would have. */
  peers(n: number): Promise<RunStore[]>;
}

const HOUR = 3_600_000;
let n = 0;
const uid = (what: string): string => `${what}-${process.pid}-${++n}-${Math.random().toString(36).slice(2, 8)}`;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A fresh run record owned by `owner` until `leaseUntil`. */
export function record(owner: string, leaseUntil: number, over: Partial<RunRecord> = {}): RunRecord {
  const now = Date.now();
  return {
    v: 1,
    runId: uid('run'),
    traceId: uid('trace'),
    chain: 'find-and-update',
    fingerprint: 'fp-1',
    sessionId: 's-1',
    input: { match: 'groceries', at: new Date('2024-05-06T07:08:09.010Z') },
    context: { userId: 'u-1', tenant: 't' },
    contextHash: 'ctx-u-1',
    startedAt: now,
    deadlineAt: now + HOUR,
    status: 'running',
    owner,
    leaseUntil,
    ...over,
  };
}

/** A journal entry for `step` with `value`. */
export function entry(step: string, value: unknown, n = 1): JournalEntry {
  return {
    step,
    value,
    trace: {
      stepNumber: n,
      id: step,
      tool: 'list_tasks',
      status: 'success',
      attempts: 1,
      latencyMs: 3,
      startedAt: new Date(0).toISOString(),
    },
  };
}

const steps = (run: StoredRun | undefined) => run?.journal.map((e) => e.step);

/**
 * The run-store contract.
 *
 * @example
 * ```ts
 * runStoreContract('memory', async () => { const idempotency = memoryIdempotencyStore(); … });
 * ```
 */
export function runStoreContract(name: string, setup: () => Promise<RunStoreSetup>): void {
  describe(`${name} run store: the RunStore contract`, () => {
    it('records a new run and reads it back whole, Dates included', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR, { approvedGate: 'ignored', result: 'ignored' });
      expect(await runs.create(rec, Date.now())).toEqual({ status: 'created' });
      const got = await runs.get(rec.runId);
      const { approvedGate: _gate, result: _result, ...expected } = rec;
      expect(got).toEqual({ ...expected, journal: [] });
      expect((got!.input as { at: Date }).at).toBeInstanceOf(Date);
      expect(await runs.get(uid('missing'))).toBeUndefined();
    });

    it('reports a run id in flight on a live lease as busy, and takes over one whose lease expired', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const rec = record('A', t + 1000);
      await runs.create(rec, t);
      expect(await runs.journal(rec.runId, 'A', [entry('find', [1, 2])])).toBe(true);
      const busy = await runs.create({ ...rec, owner: 'B', leaseUntil: t + 5000 }, t + 1000); // the lease still holds at its last ms
      expect(busy.status).toBe('busy');
      expect(busy.status === 'busy' && busy.run).toMatchObject({ owner: 'A', leaseUntil: t + 1000, status: 'running' });
      const taken = await runs.create({ ...rec, owner: 'B', leaseUntil: t + 9000 }, t + 1001);
      expect(taken.status).toBe('taken');
      expect(taken.status === 'taken' && taken.run).toMatchObject({
        owner: 'B',
        previousOwner: 'A',
        leaseUntil: t + 9000,
        status: 'running',
        deadlineAt: rec.deadlineAt,
        input: rec.input,
      });
      expect(taken.status === 'taken' && steps(taken.run)).toEqual(['find']);
      // The old owner is fenced off; the new one writes.
      expect(await runs.journal(rec.runId, 'A', [entry('update', 'a')])).toBe(false);
      expect(await runs.finish(rec.runId, 'A', 'completed', { status: 'completed' }, HOUR)).toBe(false);
      expect(await runs.journal(rec.runId, 'B', [entry('update', 'b')])).toBe(true);
      expect((await runs.get(rec.runId))!.journal.map((e) => e.value)).toEqual([[1, 2], 'b']);
    });

    it('reports an ended or parked run id with its recorded result, whatever its lease', async () => {
      const { runs } = await setup();
      const t = Date.now();
      for (const status of ['completed', 'failed', 'declined', 'awaiting_confirmation'] as const) {
        const rec = record('A', t + 1000);
        await runs.create(rec, t);
        const result = { status, runId: rec.runId, output: { n: 1 } };
        expect(await runs.finish(rec.runId, 'A', status, result, HOUR)).toBe(true);
        const again = await runs.create({ ...rec, owner: 'B', leaseUntil: t + 9000 }, t + 5000);
        expect(again.status).toBe('ended');
        expect(again.status === 'ended' && again.run).toMatchObject({ status, result, owner: 'A', leaseUntil: 0 });
      }
    });

    it('journals in order, keeps what the codec keeps, and refuses writes from anyone but the owner of a running run', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      const values = [{ at: new Date(5) }, 2n ** 70n, undefined, null, 'text'];
      for (const [i, v] of values.entries())
        expect(await runs.journal(rec.runId, 'A', [entry(`s${i}`, v, i + 1)])).toBe(true);
      expect(await runs.journal(rec.runId, 'B', [entry('intruder', 1)])).toBe(false);
      expect(await runs.journal(uid('missing'), 'A', [entry('x', 1)])).toBe(false);
      const skipped: JournalEntry = { step: 'skipped', skipped: true, trace: entry('skipped', 0).trace };
      expect(await runs.journal(rec.runId, 'A', [skipped])).toBe(true);
      const got = (await runs.get(rec.runId))!;
      expect(steps(got)).toEqual(['s0', 's1', 's2', 's3', 's4', 'skipped']);
      expect(got.journal.slice(0, 5).map((e) => e.value)).toEqual(values);
      expect(got.journal[0]!.value).toEqual({ at: new Date(5) });
      expect(got.journal[5]).toEqual(skipped);
      expect(got.journal[4]!.trace).toEqual(entry('s4', 'text', 5).trace);
      await runs.finish(rec.runId, 'A', 'completed', {}, HOUR);
      expect(await runs.journal(rec.runId, 'A', [entry('late', 1)])).toBe(false); // ended: nobody writes
      expect(steps(await runs.get(rec.runId))).toHaveLength(6);
    });

    it('journals several entries in one write, in order, all or none', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      expect(await runs.journal(rec.runId, 'A', [entry('first', 1)])).toBe(true);
      const started: JournalEntry = { step: 'pay', started: { tool: 'pay', input: { n: 2n }, at: 7 } };
      expect(await runs.journal(rec.runId, 'A', [entry('find', [1, 2], 2), entry('pick', 'x', 3), started])).toBe(true);
      expect(await runs.journal(rec.runId, 'B', [entry('x', 1), entry('y', 2)])).toBe(false);
      await expect(runs.journal(rec.runId, 'A', [entry('ok', 1), entry('bad', new Map())])).rejects.toThrow(
        CheckpointEncodeError,
      );
      const got = (await runs.get(rec.runId))!;
      expect(got.journal.map((e) => e.step)).toEqual(['first', 'find', 'pick', 'pay']);
      expect(got.journal[3]).toEqual(started);
      expect(got.journal[1]!.value).toEqual([1, 2]);
    });

    it('journals 10,000 entries in one write (a re-run seeding a large forEach)', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      const many = Array.from({ length: 10_000 }, (_, i) => entry(`each/${i}`, i));
      expect(await runs.journal(rec.runId, 'A', many)).toBe(true);
      expect(steps(await runs.get(rec.runId))).toEqual(many.map((e) => e.step));
    });

    it('refuses a value no store can keep before writing anything', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await expect(runs.create({ ...rec, input: { cb: () => 1 } }, Date.now())).rejects.toThrow(CheckpointEncodeError);
      expect(await runs.get(rec.runId)).toBeUndefined();
      await runs.create(rec, Date.now());
      await expect(runs.journal(rec.runId, 'A', [entry('bad', new Map())])).rejects.toThrow(CheckpointEncodeError);
      expect(steps(await runs.get(rec.runId))).toEqual([]);
    });

    it('renews only the runs the owner still holds and that are running, in one call', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const [a1, a2, b, ended] = [
        record('A', t + 100),
        record('A', t + 100),
        record('B', t + 100),
        record('A', t + 100),
      ];
      for (const r of [a1, a2, b, ended]) await runs.create(r, t);
      await runs.finish(ended.runId, 'A', 'completed', {}, HOUR);
      await runs.renew('A', [a1.runId, a2.runId, b.runId, ended.runId, uid('missing')], t + 7000);
      await runs.renew('A', [], t + 8000); // nothing to renew: no error
      expect((await runs.get(a1.runId))!.leaseUntil).toBe(t + 7000);
      expect((await runs.get(a2.runId))!.leaseUntil).toBe(t + 7000);
      expect((await runs.get(b.runId))!).toMatchObject({ owner: 'B', leaseUntil: t + 100 });
      expect((await runs.get(ended.runId))!).toMatchObject({ status: 'completed', leaseUntil: 0 });
      expect(await runs.get(uid('missing'))).toBeUndefined();
      // A renewed lease is live: nobody takes the run over or claims it.
      expect((await runs.create({ ...a1, owner: 'C' }, t + 5000)).status).toBe('busy');
      const claimed = await runs.claimExpired('C', t + 5000, t + 9000, 10);
      expect(claimed.map((r) => [r.runId, r.owner, r.previousOwner])).toEqual([[b.runId, 'C', 'B']]);
      expect((await runs.get(b.runId))!.previousOwner).toBeUndefined(); // told the claimer, not kept
    });

    it('renew resolves with the ids it renewed: a run lost to another owner, ended or missing is left out', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const [mine, taken, ended] = [record('A', t + 100), record('A', t + 100), record('A', t + 100)];
      for (const r of [mine, taken, ended]) await runs.create(r, t);
      await runs.create({ ...taken, owner: 'B', leaseUntil: t + 9000 }, t + 1000); // taken over
      await runs.finish(ended.runId, 'A', 'completed', {}, HOUR);
      expect((await runs.renew('A', [mine.runId, taken.runId, ended.runId, uid('missing')], t + 5000)).sort()).toEqual([
        mine.runId,
      ]);
      expect(await runs.renew('A', [], t + 5000)).toEqual([]);
    });

    it('binds a run id to its chain and context hash: another one gets mismatch, and the run is left as it was', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const rec = record('A', t + 1000);
      await runs.create(rec, t);
      await runs.journal(rec.runId, 'A', [entry('find', 'secret')]);
      const before = await runs.get(rec.runId);
      for (const other of [{ chain: 'pay' }, { contextHash: 'ctx-bob' }]) {
        expect(await runs.create({ ...rec, ...other, owner: 'B', leaseUntil: t + 9000 }, t)).toEqual({
          status: 'mismatch',
        }); // live lease
        expect(await runs.create({ ...rec, ...other, owner: 'B', leaseUntil: t + 9000 }, t + 5000)).toEqual({
          status: 'mismatch',
        }); // expired: not taken over
      }
      expect(await runs.get(rec.runId)).toEqual(before);
      // In flight under another fingerprint of the chain: not taken over, even with its lease expired.
      const changed = await runs.create({ ...rec, fingerprint: 'fp-2', owner: 'B', leaseUntil: t + 9000 }, t + 5000);
      expect(changed.status).toBe('busy');
      expect(await runs.get(rec.runId)).toEqual(before);
      await runs.finish(rec.runId, 'A', 'completed', { output: 'secret' }, HOUR);
      expect(await runs.create({ ...rec, contextHash: 'ctx-bob', owner: 'B' }, t + 5000)).toEqual({
        status: 'mismatch',
      });
      expect((await runs.create({ ...rec, owner: 'B' }, t + 5000)).status).toBe('ended'); // the same caller's retry
    });

    it('claims only the runs the filter allows (chain and fingerprint, or orphaned), passing over the others untouched', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const others = Array.from({ length: 25 }, (_, i) =>
        record('A', t - 5000 + i, { chain: 'other', deadlineAt: t + HOUR }),
      );
      const changed = record('A', t - 6000, { fingerprint: 'fp-old', deadlineAt: t + HOUR });
      const mine = [0, 1, 2].map((i) => record('A', t - 100 + i));
      const orphan = record('A', t - 7000, { chain: 'gone', deadlineAt: t - 60_000 });
      for (const r of [...others, changed, ...mine, orphan]) await runs.create(r, t - 10_000);
      const only = {
        chains: [
          { name: 'find-and-update', fingerprint: 'fp-1' },
          { name: 'unrelated', fingerprint: 'x' },
        ],
      };
      const first = await runs.claimExpired('B', t, t + HOUR, 2, only);
      const second = await runs.claimExpired('B', t, t + HOUR, 10, only);
      expect([...first, ...second].map((r) => r.runId).sort()).toEqual(mine.map((r) => r.runId).sort());
      expect(first).toHaveLength(2);
      for (const r of [...others, changed, orphan])
        expect(await runs.get(r.runId)).toMatchObject({ owner: 'A', leaseUntil: r.leaseUntil });
      expect(
        (await runs.claimExpired('C', t, t + HOUR, 10, { ...only, orphanedBefore: t - 30_000 })).map((r) => r.runId),
      ).toEqual([orphan.runId]);
      expect(await runs.claimExpired('C', t, t + HOUR, 10, { chains: [] })).toEqual([]);
      expect(await runs.claimExpired('C', t, t + HOUR, 100)).toHaveLength(26); // no filter: every expired run
    });

    it('finishes once, by the owner, and forgets the run after its retention', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      await runs.journal(rec.runId, 'A', [entry('find', 1)]);
      const result = { status: 'failed', error: { code: 'x', at: new Date(7) } };
      // Long enough that a loaded machine's pause between finish and get does not outlast it.
      const retention = 300;
      expect(await runs.finish(rec.runId, 'B', 'failed', result, retention)).toBe(false);
      expect(await runs.finish(rec.runId, 'A', 'failed', result, retention)).toBe(true);
      expect(await runs.finish(rec.runId, 'A', 'completed', {}, retention)).toBe(false);
      expect(await runs.get(rec.runId)).toMatchObject({
        status: 'failed',
        result,
        journal: [{ step: 'find', value: 1 }],
      });
      expect(await runs.finish(uid('missing'), 'A', 'completed', {}, retention)).toBe(false);
      await pause(retention + 150);
      expect(await runs.get(rec.runId)).toBeUndefined();
      // The id is free again: a new run with it starts with an empty journal.
      expect(await runs.create({ ...rec, owner: 'B' }, Date.now())).toEqual({ status: 'created' });
      expect(await runs.get(rec.runId)).toMatchObject({ owner: 'B', status: 'running', journal: [] });
    });

    it('finish journals the given entries in the same write, in order, and only for the owner', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      await runs.journal(rec.runId, 'A', [entry('find', 1)]);
      expect(await runs.finish(rec.runId, 'B', 'completed', { status: 'completed' }, HOUR, [entry('lost', 0)])).toBe(
        false,
      );
      expect(
        await runs.finish(rec.runId, 'A', 'completed', { status: 'completed' }, HOUR, [
          entry('pick', 2),
          entry('update', 3),
        ]),
      ).toBe(true);
      expect((await runs.get(rec.runId))?.journal.map((e) => [e.step, e.value])).toEqual([
        ['find', 1],
        ['pick', 2],
        ['update', 3],
      ]);
    });

    it('reopens only a run parked at a gate: running again under the new owner, journal kept, result cleared', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const rec = record('A', t + HOUR);
      await runs.create(rec, t);
      await runs.journal(rec.runId, 'A', [entry('find', 1)]);
      const update = { leaseUntil: t + 5000, approvedGate: 'delete', deadlineAt: t + 2 * HOUR };
      expect(await runs.reopen(rec.runId, 'B', update)).toBe(false); // running
      expect(await runs.reopen(uid('missing'), 'B', update)).toBe(false);
      await runs.finish(rec.runId, 'A', 'awaiting_confirmation', { status: 'awaiting_confirmation' }, HOUR);
      expect(await runs.reopen(rec.runId, 'B', update)).toBe(true);
      expect(await runs.reopen(rec.runId, 'C', update)).toBe(false); // resumed once
      const got = (await runs.get(rec.runId))!;
      expect(got).toMatchObject({
        status: 'running',
        owner: 'B',
        leaseUntil: t + 5000,
        approvedGate: 'delete',
        deadlineAt: t + 2 * HOUR,
      });
      expect(got.result).toBeUndefined();
      expect(steps(got)).toEqual(['find']);
      expect(await runs.journal(rec.runId, 'B', [entry('delete', true)])).toBe(true);
      expect(await runs.finish(rec.runId, 'B', 'completed', { status: 'completed' }, HOUR)).toBe(true);
      expect(await runs.reopen(rec.runId, 'C', update)).toBe(false); // ended
      // A run reopened and then ended again is kept for its retention, not for ever.
      const kept = await runs.get(rec.runId);
      expect(kept).toMatchObject({ status: 'completed', approvedGate: 'delete', result: { status: 'completed' } });
    });

    it('keeps texts that need escaping exactly, in journal entries, a parked run and a finished one', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const odd = { s: 'quote " back \\ slash {a,b} NULL \u2028 \u0000 🙂 lone \ud800 end', k: ['"', '\\', ''] };
      const [parked, ended] = [record('A', t + HOUR), record('A', t + HOUR)];
      for (const r of [parked, ended]) await runs.create(r, t);
      expect(await runs.journal(ended.runId, 'A', [entry('a', odd), entry('b', [odd, odd], 2)])).toBe(true);
      expect(await runs.finish(ended.runId, 'A', 'completed', odd, HOUR, [entry('c', odd, 3)])).toBe(true);
      const got = (await runs.get(ended.runId))!;
      expect(got.journal.map((e) => e.value)).toEqual([odd, [odd, odd], odd]);
      expect(got.result).toEqual(odd);
      if (runs.parkWaiting) {
        expect(await runs.parkWaiting(parked.runId, 'A', odd, null, [entry('nap', odd)])).toBe(true);
        const p = (await runs.get(parked.runId))!;
        expect([p.result, p.journal[0]!.value]).toEqual([odd, odd]);
      }
    });

    it('parks a run waiting with no lease, due at its wake-up and not before, never claimed; takeParked takes it back once', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const [sleeper, listener] = [record('A', t + 1000), record('A', t + 1000)];
      for (const r of [sleeper, listener]) await runs.create(r, t);
      const nap = entry('nap', null);
      expect(await runs.parkWaiting!(sleeper.runId, 'A', { status: 'waiting' }, t + 5000, [nap])).toBe(true);
      expect(await runs.parkWaiting!(listener.runId, 'A', { status: 'waiting' }, null)).toBe(true);
      expect(await runs.parkWaiting!(uid('missing'), 'A', { status: 'waiting' }, null)).toBe(false);
      for (const r of [sleeper, listener])
        expect(await runs.get(r.runId)).toMatchObject({
          status: 'waiting',
          leaseUntil: 0,
          result: { status: 'waiting' },
        });
      expect(steps((await runs.get(sleeper.runId))!)).toEqual(['nap']);
      expect(await runs.claimExpired('C', t + HOUR, t + 2 * HOUR, 10)).toEqual([]); // parked: never claimed
      expect(await runs.dueWaiting!(t + 4999, 10)).toEqual([]);
      expect(await runs.dueWaiting!(t + 5000, 10)).toEqual([sleeper.runId]); // the listener waits for its signal only
      const update = { leaseUntil: t + 9000, deadlineAt: t + 2 * HOUR };
      const takes = await Promise.all(['B', 'C'].map((o) => runs.takeParked!(sleeper.runId, o, 'waiting', update)));
      expect(takes.filter(Boolean)).toHaveLength(1);
      expect(await runs.get(sleeper.runId)).toMatchObject({ status: 'running', leaseUntil: t + 9000 });
      expect(await runs.dueWaiting!(t + HOUR, 10)).toEqual([]);
    });

    it('takeParked with `seen` takes a run only while it is still parked where its taker read it', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const rec = record('A', t + 1000);
      await runs.create(rec, t);
      const update = { leaseUntil: t + 9000, deadlineAt: t + 2 * HOUR };
      // Text PostgreSQL's JSON parser refuses (a NUL, a lone surrogate) rides along, as a full trace would carry it.
      const waitingAt = (step: string) => ({
        status: 'waiting',
        waiting: { step, signal: 'approve' },
        odd: 'a\u0000b\ud800',
      });
      // Parked at w1 (a sleep s0 journaled with the park); two readers see it there.
      expect(await runs.parkWaiting!(rec.runId, 'A', waitingAt('w1'), null, [entry('s0', null)])).toBe(true);
      const read = (await runs.get(rec.runId))!;
      const seen = { step: 'w1', journal: read.journal.length };
      expect(
        await runs.takeParked!(rec.runId, 'B', 'waiting', update, entry('w1', 'from-B'), { step: 'w2', journal: 1 }),
      ).toBe(false);
      expect(
        await runs.takeParked!(rec.runId, 'B', 'waiting', update, entry('w1', 'from-B'), { step: 'w1', journal: 0 }),
      ).toBe(false);
      // The first reader takes it, and the run goes on to park at w2 with nothing journaled on the way.
      expect(await runs.takeParked!(rec.runId, 'B', 'waiting', update, undefined, seen)).toBe(true);
      expect(await runs.parkWaiting!(rec.runId, 'B', waitingAt('w2'), null)).toBe(true);
      // The second reader's take, meant for w1, comes late: refused, and nothing journaled.
      expect(await runs.takeParked!(rec.runId, 'C', 'waiting', update, entry('w1', 'from-C'), seen)).toBe(false);
      expect(await runs.get(rec.runId)).toMatchObject({ status: 'waiting', result: waitingAt('w2') });
      expect(steps((await runs.get(rec.runId))!)).toEqual(['s0']);
      // Taken at w2, it journals w2 and parks in doubt at a write; a decision read before is refused.
      expect(
        await runs.takeParked!(rec.runId, 'C', 'waiting', update, entry('w2', 'ok'), { step: 'w2', journal: 1 }),
      ).toBe(true);
      expect(await runs.journal(rec.runId, 'C', [{ step: 'pay', started: { tool: 'pay', input: {}, at: t } }])).toBe(
        true,
      );
      expect(await runs.finish(rec.runId, 'C', 'in_doubt', { status: 'in_doubt', step: 'pay' }, Infinity)).toBe(true);
      const decision = { step: 'pay', decision: { retry: true, by: 'ops', at: t } };
      expect(await runs.takeParked!(rec.runId, 'D', 'in_doubt', update, decision, { step: 'pay', journal: 2 })).toBe(
        false,
      );
      expect(await runs.takeParked!(rec.runId, 'D', 'in_doubt', update, decision, { step: 'pay', journal: 3 })).toBe(
        true,
      );
      expect(steps((await runs.get(rec.runId))!)).toEqual(['s0', 'w2', 'pay', 'pay']);
    });

    it('parks a run in doubt with no owner and no lease, never claimed; takeParked takes it back once, its entry journaled in the same write', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const rec = record('A', t + 1000);
      await runs.create(rec, t);
      await runs.journal(rec.runId, 'A', [entry('find', 1)]);
      expect(
        await runs.journal(rec.runId, 'A', [
          {
            step: 'refund',
            started: { tool: 'issue_refund', input: { amount: 5 }, at: t },
          },
        ]),
      ).toBe(true);
      const update = { leaseUntil: t + 5000, deadlineAt: t + 2 * HOUR };
      expect(await runs.takeParked!(rec.runId, 'B', 'in_doubt', update)).toBe(false); // running
      expect(await runs.finish(rec.runId, 'A', 'in_doubt', { status: 'in_doubt', step: 'refund' }, Infinity)).toBe(
        true,
      );
      expect(await runs.get(rec.runId)).toMatchObject({
        status: 'in_doubt',
        leaseUntil: 0,
        result: { status: 'in_doubt' },
      });
      expect(await runs.claimExpired('C', t + HOUR, t + 2 * HOUR, 10)).toEqual([]); // parked: never claimed
      expect(
        (await runs.listRuns!({ statuses: ['in_doubt'], since: -Infinity, until: Infinity, limit: 10 })).runs.map(
          (r) => r.runId,
        ),
      ).toEqual([rec.runId]);
      expect(await runs.takeParked!(rec.runId, 'B', 'awaiting_confirmation', update)).toBe(false); // another parked status
      expect(await runs.takeParked!(uid('missing'), 'B', 'in_doubt', update)).toBe(false);
      const decision = { step: 'refund', decision: { retry: true, by: 'ops:alice', at: t } };
      const takes = await Promise.all(
        ['B', 'C', 'D'].map((o) => runs.takeParked!(rec.runId, o, 'in_doubt', update, decision)),
      );
      expect(takes.filter(Boolean)).toHaveLength(1); // exactly one taker
      const winner = ['B', 'C', 'D'][takes.indexOf(true)]!;
      const got = (await runs.get(rec.runId))!;
      expect(got).toMatchObject({ status: 'running', owner: winner, leaseUntil: t + 5000, deadlineAt: t + 2 * HOUR });
      expect(got.result).toBeUndefined();
      expect(got.journal.map((e) => e.step)).toEqual(['find', 'refund', 'refund']);
      expect(got.journal[2]).toEqual(decision);
      expect(
        (await runs.listRuns!({ statuses: ['in_doubt'], since: -Infinity, until: Infinity, limit: 10 })).runs,
      ).toEqual([]);
      expect(await runs.journal(rec.runId, winner, [entry('refund', 'ok')])).toBe(true);
      expect(await runs.finish(rec.runId, winner, 'completed', { status: 'completed' }, HOUR)).toBe(true);
    });

    it('claims only running runs whose lease expired, up to the limit, with their journals, once', async () => {
      const { runs } = await setup();
      const t = Date.now();
      const expired = [0, 1, 2].map((i) => record('A', t - 3000 + i));
      const live = record('A', t + HOUR);
      const ended = record('A', t - 5000);
      for (const r of [...expired, live, ended]) await runs.create(r, t - 10_000);
      await runs.finish(ended.runId, 'A', 'completed', {}, HOUR);
      await runs.journal(expired[0]!.runId, 'A', [entry('find', 'f')]);
      await runs.journal(expired[0]!.runId, 'A', [entry('update', 'u')]);
      const first = await runs.claimExpired('B', t, t + HOUR, 2);
      expect(first).toHaveLength(2);
      const second = await runs.claimExpired('C', t, t + HOUR, 10);
      const all = [...first, ...second];
      expect(all.map((r) => r.runId).sort()).toEqual(expired.map((r) => r.runId).sort());
      for (const r of first) expect(r).toMatchObject({ owner: 'B', leaseUntil: t + HOUR, status: 'running' });
      expect(second[0]).toMatchObject({ owner: 'C' });
      expect(steps(all.find((r) => r.runId === expired[0]!.runId))).toEqual(['find', 'update']);
      expect(all.find((r) => r.runId === expired[0]!.runId)!.journal.map((e) => e.value)).toEqual(['f', 'u']);
      expect(await runs.claimExpired('D', t, t + HOUR, 10)).toEqual([]);
      expect(await runs.claimExpired('D', t, t + HOUR, 0)).toEqual([]);
      // The claimer owns them now: the old owner is fenced off.
      expect(await runs.journal(expired[0]!.runId, 'A', [entry('late', 1)])).toBe(false);
      expect((await runs.get(live.runId))!.owner).toBe('A');
      expect(await runs.claimExpired('D', t + 2 * HOUR, t + 3 * HOUR, Infinity)).toHaveLength(4); // no limit: every expired one (the live run's lease too has ended by then)
    });

    it('claims each of 50 expired runs exactly once when 3 stores on separate connections claim at once', async () => {
      const { runs, peers } = await setup();
      const t = Date.now();
      const ids = new Set<string>();
      for (let i = 0; i < 50; i++) {
        const r = record('dead', t - 1000 - i);
        ids.add(r.runId);
        await runs.create(r, t - 10_000);
      }
      const claimers = await peers(3);
      const claimed = await Promise.all(
        claimers.map(async (store, i) => {
          const mine: string[] = [];
          for (;;) {
            const batch = await store.claimExpired(`claimer-${i}`, t, t + HOUR, 7);
            if (batch.length === 0) return mine;
            mine.push(...batch.map((r) => r.runId));
          }
        }),
      );
      const flat = claimed.flat();
      expect(flat).toHaveLength(50);
      expect(new Set(flat)).toEqual(ids);
      for (const [i, mine] of claimed.entries())
        for (const id of mine.slice(0, 3)) expect((await runs.get(id))!.owner).toBe(`claimer-${i}`);
    });

    it('a take-over sees every journal entry acknowledged to the old owner, and the old owner none after it', async () => {
      const { runs, peers } = await setup();
      const [taker] = await peers(1); // another process, on a connection of its own
      await Promise.all([runs.get('warm-up'), taker!.get('warm-up')]); // tables and connections ready: the race is between the two writers
      for (let round = 0; round < 20; round++) {
        const t = Date.now();
        const rec = record('A', t + 50);
        await runs.create(rec, t);
        // The old owner journals as fast as it can while another owner takes the run over.
        let acknowledged = 0;
        const writer = (async () => {
          for (let i = 0; i < 500; i++) {
            if (!(await runs.journal(rec.runId, 'A', [entry(`s${i}`, i)]))) return;
            acknowledged++;
            await new Promise((r) => setImmediate(r)); // lets the taker in, even on a store that answers at once
          }
        })();
        while (acknowledged < 1 + (round % 5)) await new Promise((r) => setImmediate(r));
        const taken = await taker!.create({ ...rec, owner: 'B', leaseUntil: t + 60_000 }, t + 100);
        await writer;
        expect(taken.status).toBe('taken');
        expect(acknowledged).toBeLessThan(500);
        expect(taken.status === 'taken' && taken.run.journal).toHaveLength(acknowledged);
        expect((await runs.get(rec.runId))!.journal).toHaveLength(acknowledged);
      }
    });

    it('keeps the idempotency result of a journaled step where the idempotency store reads it, even when the owner lost the run', async () => {
      const { runs, idempotency } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      const key = uid('idem');
      expect(await idempotency.begin(key)).toEqual({ status: 'new' });
      expect(await runs.journal(rec.runId, 'A', [entry('update', { id: 7 })], { key, value: { id: 7 } })).toBe(true);
      expect(await idempotency.begin(key)).toEqual({ status: 'done', at: expect.any(Number), value: { id: 7 } });
      expect(steps(await runs.get(rec.runId))).toEqual(['update']);
      // Lost the run: the step is not journaled, but its call happened: a re-run must find its result.
      const other = uid('idem');
      expect(await runs.journal(rec.runId, 'B', [entry('again', 1)], { key: other, value: 'kept', ttlMs: HOUR })).toBe(
        false,
      );
      expect(await idempotency.begin(other)).toEqual({ status: 'done', at: expect.any(Number), value: 'kept' });
      expect(steps(await runs.get(rec.runId))).toEqual(['update']);
    });

    it('journals a step whose idempotency result JSON cannot hold (a BigInt): the step is never lost for it', async () => {
      const { runs } = await setup();
      const rec = record('A', Date.now() + HOUR);
      await runs.create(rec, Date.now());
      expect(
        await runs.journal(rec.runId, 'A', [entry('count', 2n ** 70n)], { key: uid('idem'), value: 2n ** 70n }),
      ).toBe(true);
      expect((await runs.get(rec.runId))!.journal.map((e) => e.value)).toEqual([2n ** 70n]);
    });
  });

  describe(`${name} run store: listing runs (runner.listRuns)`, () => {
    const T0 = Date.UTC(2026, 0, 1);
    const q = (over: Partial<RunListQuery> = {}): RunListQuery => ({
      statuses: RUN_STATUSES,
      since: -Infinity,
      until: Infinity,
      limit: 50,
      ...over,
    });
    const ids = (page: { runs: { runId: string }[] }) => page.runs.map((r) => r.runId);
    /** Records a run started at `startedAt`, ended with `status` (left running when 'running'). */
    const add = async (
      runs: RunStore,
      startedAt: number,
      status: RunStatus,
      over: Partial<RunRecord> = {},
      result: unknown = { status },
    ) => {
      const rec = record('A', Date.now() + HOUR, { startedAt, ...over });
      await runs.create(rec, Date.now());
      await runs.journal(rec.runId, 'A', [entry('find', [1])]);
      if (status !== 'running') expect(await runs.finish(rec.runId, 'A', status, result, HOUR)).toBe(true);
      return rec.runId;
    };

    it('filters by one status, several, a chain and a start-time range, newest first', async () => {
      const { runs } = await setup();
      const done1 = await add(runs, T0 + 1, 'completed');
      const failed = await add(
        runs,
        T0 + 2,
        'failed',
        {},
        {
          status: 'failed',
          error: { category: 'timeout', code: 'tool_timeout', message: 'secret-token-123' },
          completed: { find: 'x' },
        },
      );
      const running = await add(runs, T0 + 3, 'running');
      const other = await add(runs, T0 + 4, 'completed', { chain: 'other-chain' });
      const declined = await add(runs, T0 + 5, 'declined');
      expect(ids(await runs.listRuns!(q({ statuses: ['completed'] })))).toEqual([other, done1]);
      expect(ids(await runs.listRuns!(q({ statuses: ['failed', 'running'] })))).toEqual([running, failed]);
      expect(ids(await runs.listRuns!(q()))).toEqual([declined, other, running, failed, done1]);
      expect(ids(await runs.listRuns!(q({ chain: 'find-and-update' })))).toEqual([declined, running, failed, done1]);
      expect(ids(await runs.listRuns!(q({ chain: 'other-chain', statuses: ['completed'] })))).toEqual([other]);
      expect(ids(await runs.listRuns!(q({ chain: 'nobody' })))).toEqual([]);
      expect(ids(await runs.listRuns!(q({ since: T0 + 2, until: T0 + 4 })))).toEqual([running, failed]); // since inclusive, until exclusive
      const page = await runs.listRuns!(q({ statuses: ['failed', 'completed'] }));
      const f = page.runs.find((r) => r.runId === failed)!;
      expect(f).toEqual({
        runId: failed,
        chain: 'find-and-update',
        status: 'failed',
        startedAt: T0 + 2,
        endedAt: expect.any(Number),
        steps: 1,
        error: { category: 'timeout', code: 'tool_timeout' },
      });
      expect(JSON.stringify(page)).not.toMatch(/secret-token-123|groceries|u-1/); // no message, input, output or context
      expect(page.more).toBe(false);
      expect((await runs.listRuns!(q({ statuses: ['running'] }))).runs[0]).toEqual({
        runId: running,
        chain: 'find-and-update',
        status: 'running',
        startedAt: T0 + 3,
        steps: 1,
      });
    });

    it('lists parked runs with the gated step and its question, and moves a run between statuses as it changes', async () => {
      const { runs } = await setup();
      const parked = await add(
        runs,
        T0 + 10,
        'awaiting_confirmation',
        {},
        {
          status: 'awaiting_confirmation',
          resumeToken: 'tok-secret',
          confirmation: { step: 'delete', tool: 'delete_task', prompt: 'Delete 3 tasks?', expiresAt: 'x' },
        },
      );
      const inbox = await runs.listRuns!(q({ statuses: ['awaiting_confirmation'] }));
      expect(inbox.runs).toEqual([
        {
          runId: parked,
          chain: 'find-and-update',
          status: 'awaiting_confirmation',
          startedAt: T0 + 10,
          steps: 1,
          awaiting: { step: 'delete', question: 'Delete 3 tasks?' },
        },
      ]);
      expect(JSON.stringify(inbox)).not.toContain('tok-secret');
      expect(
        await runs.reopen(parked, 'B', {
          leaseUntil: Date.now() + HOUR,
          approvedGate: 'delete',
          deadlineAt: Date.now() + HOUR,
        }),
      ).toBe(true);
      expect(ids(await runs.listRuns!(q({ statuses: ['awaiting_confirmation'] })))).toEqual([]);
      expect(ids(await runs.listRuns!(q({ statuses: ['running'] })))).toEqual([parked]);
      expect(await runs.finish(parked, 'B', 'completed', { status: 'completed', output: 'gone' }, HOUR)).toBe(true);
      expect(ids(await runs.listRuns!(q({ statuses: ['running'] })))).toEqual([]);
      expect(ids(await runs.listRuns!(q({ statuses: ['completed'] })))).toEqual([parked]);
    });

    it('pages with a cursor across ties, with no duplicate and no gap while new runs are added', async () => {
      const { runs } = await setup();
      const made: string[] = [];
      for (let i = 0; i < 13; i++)
        made.push(await add(runs, T0 + 100 + Math.floor(i / 3), i % 2 ? 'completed' : 'failed')); // three runs per ms: ties
      const expected = (await runs.listRuns!(q())).runs.map((r) => r.runId);
      expect(new Set(expected)).toEqual(new Set(made));
      const seen: string[] = [];
      let after: RunListQuery['after'];
      for (let page = 0; page < 10; page++) {
        const got = await runs.listRuns!(q({ limit: 4, ...(after && { after }) }));
        seen.push(...ids(got));
        await add(runs, T0 + 200 + page, 'completed'); // newer than every listed run: never in a later page
        if (!got.more) break;
        const last = got.runs[got.runs.length - 1]!;
        after = { startedAt: last.startedAt, runId: last.runId };
      }
      expect(seen).toEqual(expected);
      const two = await runs.listRuns!(q({ statuses: ['completed', 'failed'], limit: 2 }));
      expect(two.more).toBe(true);
    });

    it('lists only the runs started with one of the given contexts, with every other filter and the cursor', async () => {
      const { runs } = await setup();
      const mine = (status: RunStatus, at: number, over: Partial<RunRecord> = {}) =>
        add(runs, at, status, { contextHash: `ctx-${T0}-alice`, ...over });
      const a1 = await mine('completed', T0 + 500);
      const a2 = await mine('awaiting_confirmation', T0 + 501);
      const a3 = await mine('running', T0 + 502, { chain: 'other-chain' });
      const a4 = await mine('failed', T0 + 503);
      const b1 = await add(runs, T0 + 504, 'completed', { contextHash: `ctx-${T0}-bob` });
      await add(runs, T0 + 505, 'completed', { contextHash: `ctx-${T0}-carol` });
      const any = (hash: string): RunContextMatch => ({ hash, except: [] });
      const alice = [any(`ctx-${T0}-alice`)];
      expect(ids(await runs.listRuns!(q({ contexts: alice })))).toEqual([a4, a3, a2, a1]);
      expect(ids(await runs.listRuns!(q({ contexts: [...alice, any(`ctx-${T0}-bob`)] })))).toEqual([
        b1,
        a4,
        a3,
        a2,
        a1,
      ]);
      expect(ids(await runs.listRuns!(q({ contexts: alice, statuses: ['awaiting_confirmation'] })))).toEqual([a2]);
      expect(ids(await runs.listRuns!(q({ contexts: alice, statuses: ['completed', 'failed'] })))).toEqual([a4, a1]);
      expect(ids(await runs.listRuns!(q({ contexts: alice, chain: 'other-chain' })))).toEqual([a3]);
      expect(ids(await runs.listRuns!(q({ contexts: alice, since: T0 + 501, until: T0 + 503 })))).toEqual([a3, a2]);
      expect(ids(await runs.listRuns!(q({ contexts: [any(`ctx-${T0}-nobody`)] })))).toEqual([]);
      // A hash counts only for the chains it is given for (each chain's context schema gives its own).
      const onlyOther = { hash: `ctx-${T0}-alice`, chains: ['other-chain'] };
      expect(ids(await runs.listRuns!(q({ contexts: [onlyOther] })))).toEqual([a3]);
      const butOther = { hash: `ctx-${T0}-alice`, except: ['other-chain'] };
      expect(ids(await runs.listRuns!(q({ contexts: [butOther] })))).toEqual([a4, a2, a1]);
      const first = await runs.listRuns!(q({ contexts: alice, limit: 3 }));
      expect([ids(first), first.more]).toEqual([[a4, a3, a2], true]);
      const last = first.runs[2]!;
      const next = await runs.listRuns!(
        q({ contexts: alice, limit: 3, after: { startedAt: last.startedAt, runId: last.runId } }),
      );
      expect([ids(next), next.more]).toEqual([[a1], false]);
      // A run moves between statuses and stays listed for its context under its new one.
      expect(await runs.finish(a3, 'A', 'completed', { status: 'completed' }, HOUR)).toBe(true);
      expect(ids(await runs.listRuns!(q({ contexts: alice, statuses: ['completed'] })))).toEqual([a3, a1]);
      expect(ids(await runs.listRuns!(q({ contexts: alice, statuses: ['running'] })))).toEqual([]);
    });

    it('lists no run for a context once its record expired, nor another context’s run under its id since', async () => {
      const { runs } = await setup();
      const ctx = `ctx-${T0}-expiring`;
      const kept = await add(runs, T0 + 600, 'completed', { contextHash: ctx });
      const rec = record('A', Date.now() + HOUR, { startedAt: T0 + 601, contextHash: ctx });
      await runs.create(rec, Date.now());
      expect(await runs.finish(rec.runId, 'A', 'completed', { status: 'completed' }, 1)).toBe(true); // kept 1 ms
      await new Promise((resolve) => setTimeout(resolve, 30));
      const mine = [{ hash: ctx, except: [] }];
      expect(ids(await runs.listRuns!(q({ contexts: mine })))).toEqual([kept]);
      expect(ids(await runs.listRuns!(q({ contexts: mine, limit: 1 })))).toEqual([kept]);
      // The id again, for another user: never listed for the first.
      const again = record('A', Date.now() + HOUR, {
        runId: rec.runId,
        startedAt: T0 + 602,
        contextHash: `${ctx}-bob`,
      });
      expect(await runs.create(again, Date.now())).toEqual({ status: 'created' });
      expect(ids(await runs.listRuns!(q({ contexts: mine })))).toEqual([kept]);
      expect(ids(await runs.listRuns!(q({ contexts: [{ hash: `${ctx}-bob`, except: [] }] })))).toEqual([rec.runId]);
    });

    it('pages past newer runs that expired since they were indexed, skipping none of the kept ones', async () => {
      const { runs } = await setup();
      const kept: string[] = [];
      for (let i = 0; i < 3; i++) kept.unshift(await add(runs, T0 + 300 + i, 'completed'));
      for (let i = 0; i < 10; i++) {
        const rec = record('A', Date.now() + HOUR, { startedAt: T0 + 400 + i });
        await runs.create(rec, Date.now());
        expect(await runs.finish(rec.runId, 'A', 'completed', { status: 'completed' }, 1)).toBe(true); // kept 1 ms
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
      const seen: string[] = [];
      let after: RunListQuery['after'];
      for (let page = 0; page < 10; page++) {
        const got = await runs.listRuns!(q({ statuses: ['completed'], limit: 2, ...(after && { after }) }));
        seen.push(...ids(got));
        if (!got.more) break;
        const last = got.runs[got.runs.length - 1]!;
        after = { startedAt: last.startedAt, runId: last.runId };
      }
      expect(seen).toEqual(kept);
    });
  });
}

/** A pending claim, settled or not, stops waiting (nothing polls after the test). */
function stop(claim: IdempotencyClaim): IdempotencyClaim['status'] {
  if (claim.status === 'pending') {
    claim.cancel?.();
    claim.settled.catch(() => undefined);
  }
  return claim.status;
}

/**
 * The idempotency take-over of a dead owner's claim (`begin(key, { runId, owner, takeOver })`),
 * for the stores that implement it.
 *
 * @example
 * ```ts
 * takeOverContract('redis', () => redisStores(redis, { prefix }).idempotency);
 * ```
 */
export function takeOverContract(name: string, make: () => Promise<IdempotencyStore>): void {
  describe(`${name} idempotency: a recovered run takes over its dead owner's claim`, () => {
    type Begin = (key: string, options?: IdempotencyBeginOptions) => Promise<IdempotencyClaim>;
    const as = (store: IdempotencyStore): Begin => store.begin.bind(store) as Begin;

    it('takes over a pending claim of the same run left by another owner, and only with takeOver', async () => {
      const begin = as(await make());
      const key = uid('k');
      expect(await begin(key, { runId: 'r1', owner: 'dead' })).toEqual({ status: 'new' });
      expect(stop(await begin(key, { runId: 'r1', owner: 'B' }))).toBe('pending'); // no takeOver: waits as before
      expect(await begin(key, { runId: 'r1', owner: 'B', takeOver: true })).toEqual({ status: 'new' });
      // The marker names the new owner now: its own later begin waits for it, a third owner may take it over.
      expect(stop(await begin(key, { runId: 'r1', owner: 'B', takeOver: true }))).toBe('pending');
      expect(await begin(key, { runId: 'r1', owner: 'C', takeOver: true })).toEqual({ status: 'new' });
    });

    it('the dead owner’s late failure leaves the claim its successor took over; the successor’s own ends it', async () => {
      const store = await make();
      const begin = as(store);
      const key = uid('k');
      await begin(key, { runId: 'r1', owner: 'dead' });
      expect(await begin(key, { runId: 'r1', owner: 'B', takeOver: true })).toEqual({ status: 'new' });
      await store.fail(key, new Error('boom'), false, { runId: 'r1', owner: 'dead' });
      await store.fail(key, new Error('socket hang up'), true, { runId: 'r1', owner: 'dead' });
      // Still B's call in flight: a duplicate waits for it (it would have run the write again).
      expect(stop(await store.begin(key))).toBe('pending');
      await store.fail(key, new Error('socket hang up'), true, { runId: 'r1', owner: 'B' });
      const claim = await store.begin(key);
      expect(claim.status).toBe('pending');
      await expect(claim.status === 'pending' && claim.settled).rejects.toMatchObject({
        info: { code: 'outcome_unknown', outcomeUnknown: true },
      });
      // The successor completed: the dead owner's failure leaves the kept result.
      const kept = uid('k');
      await begin(kept, { runId: 'r1', owner: 'dead' });
      await begin(kept, { runId: 'r1', owner: 'B', takeOver: true });
      await store.complete(kept, { ok: 2 });
      await store.fail(kept, new Error('boom'), false, { runId: 'r1', owner: 'dead' });
      expect(await store.begin(kept)).toEqual({ status: 'done', at: expect.any(Number), value: { ok: 2 } });
      // A kept result nested deeper than a store's JSON reader goes (Redis' cjson stops at 1000) is left too.
      const deep = uid('k');
      let value: unknown = 'x';
      for (let i = 0; i < 1200; i++) value = [value];
      await begin(deep, { runId: 'r1', owner: 'dead' });
      await begin(deep, { runId: 'r1', owner: 'B', takeOver: true });
      await store.complete(deep, value);
      await store.fail(deep, new Error('socket hang up'), true, { runId: 'r1', owner: 'dead' });
      expect(await store.begin(deep)).toEqual({ status: 'done', at: expect.any(Number), value });
      const other = uid('k');
      await begin(other, { runId: 'r1', owner: 'B' });
      await store.fail(other, new Error('boom'), false, { runId: 'r1', owner: 'B' });
      expect(await store.begin(other)).toEqual({ status: 'new' });
    });

    it('never takes over a claim of another run, a claim without a run, a kept result or an unknown outcome', async () => {
      const store = await make();
      const begin = as(store);
      const other = uid('k');
      await begin(other, { runId: 'r1', owner: 'dead' });
      expect(stop(await begin(other, { runId: 'r2', owner: 'B', takeOver: true }))).toBe('pending');
      const plain = uid('k');
      expect(await store.begin(plain)).toEqual({ status: 'new' });
      expect(stop(await begin(plain, { runId: 'r1', owner: 'B', takeOver: true }))).toBe('pending');
      const done = uid('k');
      await begin(done, { runId: 'r1', owner: 'dead' });
      await store.complete(done, { ok: 1 });
      expect(await begin(done, { runId: 'r1', owner: 'B', takeOver: true })).toEqual({
        status: 'done',
        at: expect.any(Number),
        value: { ok: 1 },
      });
      const unknown = uid('k');
      await begin(unknown, { runId: 'r1', owner: 'dead' });
      await store.fail(unknown, new Error('socket hang up'), true);
      const claim = await begin(unknown, { runId: 'r1', owner: 'B', takeOver: true });
      expect(claim.status).toBe('pending');
      await expect(claim.status === 'pending' && claim.settled).rejects.toMatchObject({
        info: { code: 'outcome_unknown', outcomeUnknown: true },
      });
    });

    it('a waiter of the taken-over claim gets the new claimant’s result', async () => {
      const store = await make();
      const begin = as(store);
      const key = uid('k');
      await begin(key, { runId: 'r1', owner: 'dead' });
      const waiter = await store.begin(key); // a duplicate elsewhere, waiting
      expect(waiter.status).toBe('pending');
      expect(await begin(key, { runId: 'r1', owner: 'B', takeOver: true })).toEqual({ status: 'new' });
      await store.complete(key, { paid: true });
      await expect(waiter.status === 'pending' && waiter.settled).resolves.toEqual({ paid: true });
    });
  });
}

/** What the run-events contract needs: a run store with an event log, and peers as other processes would have. */
export interface RunEventsSetup {
  runs: RunStore;
  /** `n` more run stores on the same data over separate connections. */
  peers(n: number): Promise<RunStore[]>;
  /** Events kept per run by `runs` (its ring's size). */
  maxEventsPerRun: number;
}

const ev = (type: string, data: unknown, step?: string): string =>
  encodeRunValue({ at: Date.now(), type, ...(step !== undefined && { step }), data });

/**
 * The event log of a run store (`runs.events`), and runners watching through it from two "instances".
 *
 * @example
 * ```ts
 * runEventsContract('memory', async () => ({ runs, peers: async (n) => [runs], maxEventsPerRun: 50 }));
 * ```
 */
export function runEventsContract(name: string, setup: () => Promise<RunEventsSetup>): void {
  describe(`${name} run store: the event log contract`, () => {
    it('numbers events from 1 per run, reads them back after a seq, decoded, in pages', async () => {
      const { runs } = await setup();
      const log = runs.events!;
      const a = uid('run');
      const b = uid('run');
      expect(
        await log.append(a, [
          ev('run:start', { chain: 'c', resumed: false }),
          ev('step:start', { stepNumber: 1 }, 's'),
        ]),
      ).toBe(2);
      expect(await log.append(b, [ev('run:start', { chain: 'c', resumed: false })])).toBe(1);
      expect(await log.append(a, [ev('step:progress', { at: new Date(5), n: 2n ** 70n }, 's')])).toBe(3);
      expect(await log.append(a, [])).toBe(3);
      const all = await log.read(a, 0, 100);
      expect(all.map((e) => [e.seq, e.runId, e.type, e.step])).toEqual([
        [1, a, 'run:start', undefined],
        [2, a, 'step:start', 's'],
        [3, a, 'step:progress', 's'],
      ]);
      expect(all[2]!.data).toEqual({ at: new Date(5), n: 2n ** 70n });
      expect(typeof all[0]!.at).toBe('number');
      expect((await log.read(a, 1, 1)).map((e) => e.seq)).toEqual([2]);
      expect(await log.read(a, 3, 10)).toEqual([]);
      expect(await log.read(uid('missing'), 0, 10)).toEqual([]);
    });

    it('keeps events with texts that need escaping exactly', async () => {
      const { runs } = await setup();
      const id = uid('run');
      const data = { s: 'quote " back \\ slash {a,b} NULL \u2028 \u0000 🙂 lone \ud800 end' };
      expect(await runs.events!.append(id, [ev('step:progress', data, 's"\\'), ev('step:progress', [data], 's')])).toBe(
        2,
      );
      const read = await runs.events!.read(id, 0, 10);
      expect(read.map((e) => [e.step, e.data])).toEqual([
        ['s"\\', data],
        ['s', [data]],
      ]);
    });

    it('keeps the newest events of a run up to its bound: a reader behind sees the gap', async () => {
      const { runs, maxEventsPerRun } = await setup();
      const log = runs.events!;
      const id = uid('run');
      const total = maxEventsPerRun * 2 + 7;
      for (let i = 0; i < total; i += 50)
        await log.append(
          id,
          Array.from({ length: Math.min(50, total - i) }, (_, k) => ev('step:progress', { i: i + k }, 's')),
        );
      const kept = await log.read(id, 0, total);
      expect(kept.length).toBeGreaterThanOrEqual(maxEventsPerRun);
      expect(kept.length).toBeLessThan(total);
      expect(kept.at(-1)!.seq).toBe(total);
      expect(kept[0]!.seq).toBeGreaterThan(1); // the first were dropped: seq 1 is not what comes after 0
      expect(kept.map((e) => e.seq)).toEqual(Array.from({ length: kept.length }, (_, i) => kept[0]!.seq + i));
    });

    it('wakes a waiter on another connection when an event is appended, and times out otherwise', async () => {
      const { runs, peers } = await setup();
      const [other] = await peers(1);
      const id = uid('run');
      await runs.events!.append(id, [ev('run:start', { chain: 'c', resumed: false })]);
      let t = Date.now();
      await other!.events!.wait(id, 1, 150);
      expect(Date.now() - t).toBeGreaterThanOrEqual(100);
      t = Date.now();
      await other!.events!.wait(id, 0, 5_000); // already there
      expect(Date.now() - t).toBeLessThan(500);
      t = Date.now();
      const waiting = other!.events!.wait(id, 1, 5_000);
      await pause(50);
      await runs.events!.append(id, [ev('step:start', { stepNumber: 1 }, 's')]);
      await waiting;
      expect(Date.now() - t).toBeLessThan(2_000);
      const aborted = new AbortController();
      const stopped = other!.events!.wait(id, 2, 5_000, aborted.signal);
      aborted.abort();
      t = Date.now();
      await stopped;
      expect(Date.now() - t).toBeLessThan(500);
    });

    it('delivers an announce to the listeners of every connection', async () => {
      const { runs, peers } = await setup();
      const [other] = await peers(1);
      const heard: string[] = [];
      const off = other!.events!.onAnnounce((id) => heard.push(id));
      const id = uid('run');
      for (let i = 0; i < 40 && heard.length === 0; i++) {
        await runs.events!.announce(id); // a subscription may take a moment to be in place: announced again, as watchers do
        await pause(25);
      }
      off();
      expect(heard).toContain(id);
    });

    it('forgets the events of a run after the retention given with its last append', async () => {
      const { runs } = await setup();
      const log = runs.events!;
      const id = uid('run');
      await log.append(id, [ev('run:start', { chain: 'c', resumed: false })]);
      await log.append(id, [ev('run:end', { status: 'completed', output: 1 })], 60);
      expect(await log.read(id, 0, 10)).toHaveLength(2);
      await pause(150);
      expect(await log.read(id, 0, 10)).toEqual([]);
      // Appending again without a retention (a resumed run) keeps the log for as long as the run lasts.
      const kept = uid('run');
      await log.append(kept, [ev('run:end', { status: 'awaiting_confirmation' })], 60);
      await log.append(kept, [ev('run:start', { chain: 'c', resumed: true })]);
      await pause(150);
      expect(await log.read(kept, 0, 10)).toHaveLength(2);
    });
  });
}

const sleepTool = defineTool({
  name: 'slow_step',
  description: 's',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const quickTool = defineTool({
  name: 'quick_step',
  description: 'q',
  input: z.object({ n: z.number() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const watchedChain = defineChain({
  name: 'watched',
  input: z.object({ n: z.number() }),
  steps: [
    { id: 'first', tool: quickTool, input: { n: ref('input', 'n') } },
    { id: 'slow', tool: sleepTool, input: { n: ref('first', 'n') } },
    { id: 'last', tool: quickTool, input: { n: ref('slow', 'n') } },
  ],
});

/**
 * Runners on two "instances" (stores on separate connections) watching each other's runs through
 * the run store's event log.
 *
 * @example
 * ```ts
 * watchAcrossRunnersContract('redis', setup);
 * ```
 */
export function watchAcrossRunnersContract(name: string, setup: () => Promise<RunEventsSetup>): void {
  describe(`${name} run store: runners watching runs across instances`, () => {
    const runners: Runner[] = [];
    afterEach(async () => {
      for (const r of runners.splice(0)) await r.close();
    });
    const make = (runs: RunStore, gate?: Promise<void>) => {
      const invoker = functionInvoker([sleepTool, quickTool], {
        slow_step: async ({ n }, call) => {
          call.progress({ waiting: true });
          await gate;
          return { n };
        },
        quick_step: async ({ n }) => ({ n }),
      });
      const runner = createRunner({ invoker, tools: [sleepTool, quickTool], chains: [watchedChain], stores: { runs } });
      runners.push(runner);
      return runner;
    };
    const types = (events: RunEvent[]) => events.map((e) => `${e.type}${e.step ? `:${e.step}` : ''}`);

    it('a run started on A is watched live from B, and a run nobody watches appends its events once', async () => {
      const { runs, peers } = await setup();
      const [peer] = await peers(1);
      let release!: () => void;
      const a = make(runs, new Promise<void>((r) => (release = r)));
      const b = make(peer!);
      const appends = { n: 0 };
      const append = runs.events!.append.bind(runs.events);
      (runs.events as { append: typeof append }).append = (...args) => {
        appends.n++;
        return append(...args);
      };
      const ends = { n: 0 };
      const finishWithEvents = runs.finishWithEvents?.bind(runs);
      if (finishWithEvents)
        runs.finishWithEvents = (...args) => {
          ends.n++;
          return finishWithEvents(...args);
        };
      // Nobody watches: every event goes in one append with the end, or in the end's own write where the store
      // has finishWithEvents (a store that appends in-process pays no round trip at all).
      const running = a.run(watchedChain, { n: 1 }, { runId: uid('quiet') });
      release();
      const quiet = await running;
      if (!runs.events!.local) expect([appends.n, ends.n]).toEqual(finishWithEvents ? [0, 1] : [1, 0]);
      expect(types(await collectEvents(b.watch(quiet.runId)))).toEqual([
        'run:start',
        'step:start:first',
        'step:end:first',
        'step:start:slow',
        'step:progress:slow',
        'step:end:slow',
        'step:start:last',
        'step:end:last',
        'run:end',
      ]);

      let release2!: () => void;
      const a2 = make(runs, new Promise<void>((r) => (release2 = r)));
      const runId = uid('live');
      const result = a2.run(watchedChain, { n: 2 }, { runId });
      const seen: RunEvent[] = [];
      for await (const e of b.watch(runId)) {
        seen.push(e);
        if (e.type === 'step:progress') release2(); // seen while the tool still runs on A: delivered live
      }
      expect((await result).status).toBe('completed');
      expect(types(seen)).toContain('step:progress:slow');
      expect(seen.at(-1)).toMatchObject({ type: 'run:end', data: { status: 'completed', output: { n: 2 } } });
    });

    it('a watcher that stops after event n and watches again on the other instance with after: n gets every later event once (20 runs)', async () => {
      const { runs, peers } = await setup();
      const [peer] = await peers(1);
      const a = make(runs);
      const b = make(peer!);
      for (let i = 0; i < 20; i++) {
        const { runId, events, result } = a.stream(watchedChain, { n: i });
        const cut = 1 + (i % 7);
        const before: RunEvent[] = [];
        for await (const e of events) {
          before.push(e);
          if (e.seq === cut) break;
        }
        const after = await collectEvents(b.watch(runId, { after: cut }));
        await result;
        const all = [...before, ...after];
        expect(all.map((e) => e.seq)).toEqual(all.map((_, k) => k + 1));
        expect(all.at(-1)!.type).toBe('run:end');
        expect(all).toHaveLength(9);
      }
    });

    it('a watch that was idle while the run ran gets the events its owner appends after recording the end, not a run:end of its own', async () => {
      const { runs, peers } = await setup();
      const [peer] = await peers(1);
      // The owner records the end, then appends its last events: held here, as a busy pool or a slow store would (well within STORE_WAIT_MS).
      let held: Promise<void> | undefined;
      let unhold!: () => void;
      const log = runs.events!;
      const owner: RunStore = {
        ...runs,
        events: {
          ...log,
          append: async (...args: Parameters<typeof log.append>) => {
            if (held) await held;
            return log.append(...args);
          },
        },
      };
      // The watcher's store: what each look at the run's record found (the real store answers).
      const runId = uid('held');
      const found: (string | undefined)[] = [];
      const watcher: RunStore = {
        ...peer!,
        get: async (id: string) => {
          const run = await peer!.get(id);
          if (id === runId) found.push(run?.status);
          return run;
        },
      };
      let release!: () => void;
      const a = make(owner, new Promise<void>((r) => (release = r)));
      const b = make(watcher);
      const result = a.run(watchedChain, { n: 3 }, { runId });
      const seen: RunEvent[] = [];
      let ended = false;
      const watching = (async () => {
        for await (const e of b.watch(runId)) seen.push(e);
        ended = true;
      })();
      const until = async (check: () => boolean) => {
        for (let t = Date.now(); !check(); await pause(10))
          if (Date.now() - t > 15_000) throw new Error(`still waiting; found ${JSON.stringify(found)}`);
      };
      // Live up to the slow step's progress, then quiet for three looks at a running run (the watch has waited long).
      await until(() => seen.some((e) => e.type === 'step:progress'));
      const looked = found.length;
      await until(() => found.slice(looked).filter((s) => s === 'running').length >= 3);
      held = new Promise<void>((r) => (unhold = r));
      release();
      // The watch finds the run ended in the store while its last events are still on their way: twice, or it stops.
      await until(() => ended || found.filter((s) => s === 'completed').length >= 2);
      unhold();
      await watching;
      expect((await result).status).toBe('completed');
      const logged = await collectEvents(b.watch(runId));
      expect(types(logged)).toEqual([
        'run:start',
        'step:start:first',
        'step:end:first',
        'step:start:slow',
        'step:progress:slow',
        'step:end:slow',
        'step:start:last',
        'step:end:last',
        'run:end',
      ]);
      expect(seen.map((e) => [e.seq, e.type])).toEqual(logged.map((e) => [e.seq, e.type]));
    });

    it('a watch of a run whose last events never reach the log (its owner died after recording the end) ends with a run:end made from the recorded result, once the log stayed quiet 20 s after the end', async () => {
      const { runs, peers } = await setup();
      const [peer] = await peers(1);
      let dead = false;
      const log = runs.events!;
      const owner: RunStore = {
        ...runs,
        events: {
          ...log,
          append: async (...args: Parameters<typeof log.append>) => {
            if (dead) throw new Error('the owner died');
            return log.append(...args);
          },
        },
      };
      const runId = uid('dead');
      const found: (string | undefined)[] = [];
      const watcher: RunStore = {
        ...peer!,
        get: async (id: string) => {
          const run = await peer!.get(id);
          if (id === runId) found.push(run?.status);
          return run;
        },
      };
      let skew = 0;
      let release!: () => void;
      const a = make(owner, new Promise<void>((r) => (release = r)));
      const b = createRunner({
        invoker: () => Promise.reject(new Error('the watcher runs nothing')),
        chains: [watchedChain],
        stores: { runs: watcher },
        now: () => Date.now() + skew,
      });
      runners.push(b);
      const result = a.run(watchedChain, { n: 3 }, { runId });
      const seen: RunEvent[] = [];
      let ended = false;
      const watching = (async () => {
        for await (const e of b.watch(runId)) seen.push(e);
        ended = true;
      })();
      const until = async (check: () => boolean) => {
        for (let t = Date.now(); !check(); await pause(10))
          if (Date.now() - t > 15_000) throw new Error(`still waiting; found ${JSON.stringify(found)}`);
      };
      await until(() => seen.some((e) => e.type === 'step:progress'));
      dead = true;
      release();
      const output = await result;
      expect(output.status).toBe('completed');
      await until(() => found.filter((s) => s === 'completed').length >= 2);
      expect(ended).toBe(false);
      skew += 20_000;
      await watching;
      expect(types(seen)).toEqual([
        'run:start',
        'step:start:first',
        'step:end:first',
        'step:start:slow',
        'step:progress:slow',
        'run:end',
      ]);
      expect(seen.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(seen.at(-1)!.data).toEqual({
        status: 'completed',
        output: (output as { output: unknown }).output,
      });
    });
  });
}

const reserve = defineTool({
  name: 'reserve',
  description: 'r',
  input: z.object({ n: z.number() }),
  output: z.object({ id: z.string() }),
  effect: 'write',
  idempotent: true,
});
const releaseTool = defineTool({
  name: 'release',
  description: 'r',
  input: z.object({ id: z.string() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
  idempotent: true,
});
const waitTool = defineTool({
  name: 'wait_for_abort',
  description: 'w',
  input: z.object({ id: z.string() }),
  output: z.object({ n: z.number() }),
  effect: 'read',
});
const cancellable = defineChain({
  name: 'cancellable',
  input: z.object({ n: z.number() }),
  timeoutMs: 30_000,
  steps: [
    {
      id: 'reserve',
      tool: reserve,
      input: { n: ref('input', 'n') },
      compensate: { tool: releaseTool, input: { id: ref('reserve', 'id') } },
    },
    { id: 'wait', tool: waitTool, input: { id: ref('reserve', 'id') } },
    { id: 'after', tool: quickTool, input: { n: ref('wait', 'n') } },
  ],
});

/**
 * `runner.cancel` from another instance: the owner's tool signal aborts within 1 s, compensation runs,
 * no later step starts, the run ends `run_cancelled`.
 *
 * @example
 * ```ts
 * cancelAcrossRunnersContract('redis', setup);
 * ```
 */
export function cancelAcrossRunnersContract(name: string, setup: () => Promise<RunEventsSetup>): void {
  describe(`${name} run store: cancel from another instance`, () => {
    const runners: Runner[] = [];
    afterEach(async () => {
      for (const r of runners.splice(0)) await r.close();
    });

    it("aborts the owner's tool within 1 s, undoes what was done, starts nothing more, ends run_cancelled", async () => {
      const { runs, peers } = await setup();
      const [peer] = await peers(1);
      const calls: string[] = [];
      let started!: () => void;
      const waiting = new Promise<void>((r) => (started = r));
      let abortedAt = 0;
      const a = createRunner({
        invoker: functionInvoker([reserve, releaseTool, waitTool, quickTool], {
          reserve: async ({ n }) => (calls.push('reserve'), { id: `r${n}` }),
          release: async () => (calls.push('release'), { ok: true }),
          wait_for_abort: ({ id }, call) =>
            new Promise((_resolve, reject) => {
              calls.push('wait');
              started();
              call.signal.addEventListener('abort', () => {
                abortedAt = Date.now();
                reject(call.signal.reason as Error);
              });
              void id;
            }),
          quick_step: async ({ n }) => (calls.push('after'), { n }),
        }),
        chains: [cancellable],
        stores: { runs },
      });
      const b = createRunner({
        invoker: () => Promise.reject(new Error('this instance only cancels')),
        chains: [cancellable],
        stores: { runs: peer! },
      });
      runners.push(a, b);
      const runId = uid('cancel');
      const result = a.run(cancellable, { n: 1 }, { runId });
      await waiting;
      const asked = Date.now();
      expect(await b.cancel(runId, { reason: 'ops said so' })).toBe('cancelled');
      expect(abortedAt).toBeGreaterThan(0);
      expect(abortedAt - asked).toBeLessThan(1_000);
      const r = await result;
      expect(r.status).toBe('failed');
      expect(r.status === 'failed' && r.error).toMatchObject({ category: 'cancelled', code: 'run_cancelled' });
      expect(r.status === 'failed' && r.error.message).toContain('ops said so');
      expect(r.status === 'failed' && r.compensated).toEqual(['reserve']);
      expect(calls).toEqual(['reserve', 'wait', 'release']); // 'after' never started
      expect((await b.getRun(runId))?.status).toBe('failed');
      const end = (await collectEvents(b.watch(runId))).at(-1);
      expect(end).toMatchObject({ type: 'run:end', data: { status: 'failed', error: { code: 'run_cancelled' } } });
      expect(await b.cancel(runId)).toBe('ended');
      expect(await b.cancel(uid('missing'))).toBe('not_found');
    });
  });
}

async function collectEvents(events: AsyncIterable<RunEvent>): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

/** Stores of one data set, as `n` instances would open them (separate connections): runs and checkpoints. */
export interface DecideSetup {
  stores(n: number): Promise<{ runs: RunStore; checkpoints: CheckpointStore }[]>;
}

const SECRET = 'decide-contract-secret-0123456789';
const sendTool = defineTool({
  name: 'send_money',
  description: 's',
  input: z.object({ id: z.string() }),
  output: z.object({ sent: z.boolean() }),
  effect: 'write',
  idempotent: true,
});
const gated = defineChain({
  name: 'gated-send',
  input: z.object({ n: z.number() }),
  context: z.object({ userId: z.string() }),
  timeoutMs: 30_000,
  steps: [
    {
      id: 'reserve',
      tool: reserve,
      input: { n: ref('input', 'n') },
      compensate: { tool: releaseTool, input: { id: ref('reserve', 'id') } },
    },
    { id: 'send', tool: sendTool, input: { id: ref('reserve', 'id') }, confirm: { prompt: 'Send it?' } },
  ],
});

/**
 * `runner.decide` and `runner.cancel` of a run parked at a gate, from other instances: exactly once
 * against concurrent `resume` and `decide` calls, `by` recorded, the token refused afterwards.
 *
 * @example
 * ```ts
 * decideAcrossRunnersContract('redis', setup);
 * ```
 */
export function decideAcrossRunnersContract(name: string, setup: () => Promise<DecideSetup>): void {
  describe(`${name} run store: decide and cancel a parked run from another instance`, () => {
    const runners: Runner[] = [];
    afterEach(async () => {
      for (const r of runners.splice(0)) await r.close();
    });
    const make = (stores: { runs: RunStore; checkpoints: CheckpointStore }, calls: string[]) => {
      const runner = createRunner({
        invoker: functionInvoker([reserve, releaseTool, sendTool], {
          reserve: async ({ n }) => (calls.push('reserve'), { id: `r${n}` }),
          release: async () => (calls.push('release'), { ok: true }),
          send_money: async () => (calls.push('send'), { sent: true }),
        }),
        chains: [gated],
        secret: SECRET,
        stores,
      });
      runners.push(runner);
      return runner;
    };
    const park = async (runner: Runner) => {
      const runId = uid('parked');
      const r = await runner.run(gated, { n: 1 }, { runId, context: { userId: 'u-1' } });
      expect(r.status).toBe('awaiting_confirmation');
      return { runId, token: r.status === 'awaiting_confirmation' ? r.resumeToken : '' };
    };

    it('an approved decision continues the run on another instance, records who decided, and the token is refused after', async () => {
      const [sa, sb] = await (await setup()).stores(2);
      const calls: string[] = [];
      const a = make(sa!, calls);
      const b = make(sb!, calls);
      const { runId, token } = await park(a);
      const r = await b.decide(runId, { approved: true, by: 'ops:alice' });
      expect(r).toMatchObject({ status: 'completed', runId, output: { sent: true } });
      expect(calls).toEqual(['reserve', 'send']);
      const info = await a.getRun(runId);
      expect(info).toMatchObject({ status: 'completed', decidedBy: 'ops:alice', steps: ['reserve', 'send'] });
      expect(info?.result?.trace.steps.find((s) => s.id === 'send')?.decidedBy).toBe('ops:alice');
      const again = await a.resume(token, { approved: true }, { context: { userId: 'u-1' } });
      expect(again.status === 'failed' && again.error.code).toBe('already_used');
      expect(await a.decide(runId, { approved: true, by: 'ops:bob' })).toBe('not_parked');
      expect(calls).toEqual(['reserve', 'send']);
    });

    it('a declined decision ends the run declined in the store, with who decided', async () => {
      const [sa, sb] = await (await setup()).stores(2);
      const calls: string[] = [];
      const a = make(sa!, calls);
      const b = make(sb!, calls);
      const { runId, token } = await park(a);
      const r = await b.decide(runId, { approved: false, by: 'ops:carol' });
      expect(r).toMatchObject({ status: 'declined', step: 'send' });
      expect(typeof r !== 'string' && r.trace.steps.find((s) => s.id === 'send')).toMatchObject({
        status: 'declined',
        decidedBy: 'ops:carol',
      });
      expect(await a.getRun(runId)).toMatchObject({ status: 'declined', decidedBy: 'ops:carol' });
      const again = await a.resume(token, { approved: true }, { context: { userId: 'u-1' } });
      expect(again.status === 'failed' && again.error.code).toBe('already_used');
      expect(calls).toEqual(['reserve']);
      // The park ended the first watch; the decision appends a second run:end after it.
      const parkedEnd = (await collectEvents(a.watch(runId))).at(-1)!;
      expect(parkedEnd).toMatchObject({ type: 'run:end', data: { status: 'awaiting_confirmation' } });
      const end = (await collectEvents(a.watch(runId, { after: parkedEnd.seq }))).at(-1);
      expect(end).toMatchObject({ type: 'run:end', data: { status: 'declined', step: 'send' } });
    });

    it('answers not_found for an unknown run and not_parked for one running or ended; refuses a malformed decision', async () => {
      const [sa] = await (await setup()).stores(1);
      const a = make(sa!, []);
      expect(await a.decide(uid('missing'), { approved: true, by: 'ops' })).toBe('not_found');
      const { runId } = await park(a);
      await expect(a.decide(runId, { approved: 'yes', by: 'ops' } as never)).rejects.toThrow(TypeError);
      await expect(a.decide(runId, { approved: true, by: '' })).rejects.toThrow(TypeError);
      expect(await a.decide(runId, { approved: false, by: 'ops' })).toMatchObject({ status: 'declined' });
      expect(await a.decide(runId, { approved: true, by: 'ops' })).toBe('not_parked');
    });

    it('cancel of a parked run compensates, ends run_cancelled, and its token is refused after', async () => {
      const [sa, sb] = await (await setup()).stores(2);
      const calls: string[] = [];
      const a = make(sa!, calls);
      const b = make(sb!, calls);
      const { runId, token } = await park(a);
      expect(await b.cancel(runId, { reason: 'the user left' })).toBe('cancelled');
      expect(calls).toEqual(['reserve', 'release']);
      const info = await a.getRun(runId);
      expect(info?.status).toBe('failed');
      expect(info?.result).toMatchObject({
        status: 'failed',
        error: { category: 'cancelled', code: 'run_cancelled' },
        compensated: ['reserve'],
      });
      const again = await a.resume(token, { approved: true }, { context: { userId: 'u-1' } });
      expect(again.status === 'failed' && again.error.code).toBe('already_used');
      expect(await b.decide(runId, { approved: true, by: 'ops' })).toBe('not_parked');
      expect(await b.cancel(runId)).toBe('ended');
      expect(calls).toEqual(['reserve', 'release']);
    });

    it('cancel of a parked run on a runner without its chain throws and leaves the run and its token as they were', async () => {
      const [sa, sb] = await (await setup()).stores(2);
      const calls: string[] = [];
      const a = make(sa!, calls);
      const b = createRunner({ invoker: functionInvoker([], {}), secret: SECRET, stores: sb! });
      runners.push(b);
      const { runId, token } = await park(a);
      await expect(b.cancel(runId)).rejects.toThrow(/chain 'gated-send'/);
      expect((await a.getRun(runId))?.status).toBe('awaiting_confirmation');
      expect(await a.resume(token, { approved: true }, { context: { userId: 'u-1' } })).toMatchObject({
        status: 'completed',
      });
      expect(calls).toEqual(['reserve', 'send']);
    });

    it('cancel of a parked run whose confirmation has expired (still kept by the store) names that cause, calls nothing', async () => {
      const [sa, sb] = await (await setup()).stores(2);
      const calls: string[] = [];
      const a = make(sa!, calls);
      const { runId } = await park(a);
      // A runner whose clock is past the token's expiry; the stores keep the run by their own clock.
      const late = createRunner({
        invoker: functionInvoker([reserve, releaseTool, sendTool], {
          reserve: async () => (calls.push('reserve'), { id: 'r' }),
          release: async () => (calls.push('release'), { ok: true }),
          send_money: async () => (calls.push('send'), { sent: true }),
        }),
        chains: [gated],
        secret: SECRET,
        stores: sb!,
        now: () => Date.now() + 2 * HOUR,
      });
      runners.push(late);
      await expect(late.cancel(runId)).rejects.toThrow(/confirmation that has expired/);
      expect(calls).toEqual(['reserve']);
      expect((await a.getRun(runId))?.status).toBe('awaiting_confirmation'); // untouched
    });

    it('50 concurrent decide and resume calls on one gate from 3 instances make exactly one tool call', async () => {
      const stores = await (await setup()).stores(3);
      const calls: string[] = [];
      const runnersHere = stores.map((s) => make(s, calls));
      const { runId, token } = await park(runnersHere[0]!);
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => {
          const r = runnersHere[i % 3]!;
          return i % 2 === 0
            ? r.decide(runId, { approved: true, by: `ops:${i}` })
            : r.resume(token, { approved: true }, { context: { userId: 'u-1' } });
        }),
      );
      expect(calls.filter((c) => c === 'send')).toHaveLength(1);
      const results = answers.filter((x) => typeof x !== 'string');
      expect(results.filter((x) => x.status === 'completed')).toHaveLength(1);
      for (const x of results)
        if (x.status !== 'completed') expect(x.status === 'failed' && x.error.code).toBe('already_used');
      expect(answers.filter((x) => typeof x === 'string').every((x) => x === 'not_parked')).toBe(true);
      expect((await runnersHere[1]!.getRun(runId))?.status).toBe('completed');
    });
  });
}
