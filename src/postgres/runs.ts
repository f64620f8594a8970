// Durable runs on PostgreSQL. Every claim and finish is one statement (INSERT … ON CONFLICT, UPDATE …
// WHERE … RETURNING): no read-then-write race. A journal write locks its run row (FOR SHARE), so it
// either lands before a take-over or is refused after it; whoever takes a run over reads the journal
// in a statement of its own, after its claim committed, so it sees every entry that was acknowledged.
import { StoreFailure } from '../stores/guard.js';
import { encodeKept, encodeRunValue, parkedStep, storedRun } from '../stores/run-codec.js';
import { steered } from '../stores/run-list.js';
import type { RunStore } from '../stores/run-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { CreateRunResult, StoredRun } from '../stores/run-store.js';
import type { RunStatus } from '../stores/run-listing.js';
import { textList, type Db } from './db.js';
import { postgresEventLog } from './run-events.js';
import { runStatements } from './run-sql.js';
import { listRuns } from './run-list.js';

interface RunRow {
  run_id: string;
  chain: string | null;
  fingerprint: string | null;
  context_hash: string | null;
  status: RunStatus;
  owner: string;
  lease_until: number;
  deadline_at: number;
  approved_gate: string | null;
  record: string;
  result: string | null;
  retry_until?: number | null;
  cancel_reason?: string | null;
}

const fromRow = (row: RunRow, journal: readonly string[]): StoredRun =>
  steered(
    storedRun(
      row.record,
      {
        status: row.status,
        owner: row.owner,
        // A waiting run's wake-up is kept in lease_until (its index); it holds no lease.
        leaseUntil: row.status === 'waiting' ? 0 : row.lease_until,
        deadlineAt: row.deadline_at,
        approvedGate: row.approved_gate,
        result: row.result,
      },
      journal,
    ),
    row.retry_until,
    row.cancel_reason,
  );

/** Options of the Postgres run store. */
export interface PostgresRunStoreOptions {
  /** How long a result kept by `journal(…, complete)` lives when the call gives no TTL. */
  idempotencyTtlMs: number;
  /** The idempotency store of the same schema, advertised as `runs.idempotency`. */
  idempotency: IdempotencyStore;
  /** Events kept per run for `runner.watch`. Default 10 000. */
  maxEventsPerRun?: number;
  /** At most one sweep of expired event logs this often (ms). Default a minute. */
  sweepEveryMs?: number;
}

/**
 * The run store of `postgresStores()`: tables `runs` and `run_journal` of its schema.
 *
 * @example
 * ```ts
 * const runs = postgresRunStore(db, { idempotencyTtlMs: 86_400_000, idempotency });
 * ```
 */
export function postgresRunStore(db: Db, options: PostgresRunStoreOptions): RunStore {
  const {
    insert,
    readJournals,
    read,
    dropExpired,
    journal,
    journalAndKeep,
    renew,
    finish,
    finishCtes,
    reopen,
    claim,
    list,
    listChain,
    listContext,
    markRetrying,
    requestCancel,
    takeParked,
    parkWaiting,
    dueWaiting,
  } = runStatements(db);

  type Read = RunRow & { expires_at: number | null; journal: string[] };
  const get = async (runId: string, what: string): Promise<Read | undefined> =>
    (await db.query<Read>(what, read, [runId])).rows[0];

  const create = async (
    data: string,
    record: Parameters<RunStore['create']>[0],
    now: number,
  ): Promise<CreateRunResult> => {
    // A run id seen at once by create, finish and the sweep settles in a few rounds; more means something is wrong.
    for (let round = 0; round < 5; round++) {
      // Only `created` comes back: the common path parses one column, not the whole record.
      const inserted = (
        await db.query<{ created: boolean; previous_owner: string | null }>('run (create)', insert, [
          record.runId,
          record.owner,
          record.leaseUntil,
          record.deadlineAt,
          data,
          now,
          record.chain,
          record.fingerprint,
          record.contextHash ?? null,
          record.startedAt,
        ])
      ).rows[0];
      if (inserted?.created) return { status: 'created' };
      const row = await get(record.runId, 'run (create)');
      if (!row) continue; // deleted meanwhile: record it now
      // Taken over by this statement (its lease had ended): the run, read after the claim committed, with its journal.
      if (inserted) {
        if (row.status === 'running' && row.owner === record.owner) {
          const run = fromRow(row, row.journal);
          if (inserted.previous_owner !== null) run.previousOwner = inserted.previous_owner;
          return { status: 'taken', run };
        }
        continue; // changed hands again meanwhile: look at it afresh
      }
      if (row.expires_at !== null && row.expires_at <= db.now()) {
        await db.query('run (create)', dropExpired, [record.runId, db.now()]); // past its retention: as if gone
        continue;
      }
      const bound =
        (row.chain === null || row.chain === record.chain) &&
        (row.context_hash === null || record.contextHash === undefined || row.context_hash === record.contextHash);
      if (!bound) return { status: 'mismatch' };
      if (row.status !== 'running') return { status: 'ended', run: fromRow(row, row.journal) };
      if (row.lease_until >= now || (row.fingerprint !== null && row.fingerprint !== record.fingerprint))
        return { status: 'busy', run: fromRow(row, row.journal) };
    }
    throw new StoreFailure({
      category: 'unavailable',
      code: 'store_unavailable',
      message: `The run (create) store is unavailable: run ${record.runId} kept changing while it was being recorded.`,
    });
  };

  const events = postgresEventLog(db, {
    ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }),
    ...(options.sweepEveryMs !== undefined && { sweepEveryMs: options.sweepEveryMs }),
  });
  // The end and the last events in one statement: the events' parameters follow the end's seven.
  const finishWithEvents = events.end.statement(finishCtes, 8);

  return {
    idempotency: options.idempotency,
    events,
    async create(record, now) {
      const data = encodeRunValue(record);
      return create(data, record, now);
    },
    async journal(runId, owner, entries, complete) {
      const data = entries.map(encodeRunValue);
      let kept: string | null | undefined;
      if (complete) {
        try {
          kept = encodeKept(complete.value);
        } catch {
          kept = undefined; // a result the codec cannot hold is not kept, as by the idempotency store itself
        }
      }
      db.sweepSoon();
      const done =
        kept === undefined
          ? await db.query('run (journal)', journal, [runId, owner, textList(data)])
          : await db.query('run (journal)', journalAndKeep, () => {
              const now = db.now();
              return [
                runId,
                owner,
                textList(data),
                complete!.key,
                kept,
                now + (complete!.ttlMs ?? options.idempotencyTtlMs),
                now,
              ];
            });
      return done.rowCount !== null && done.rowCount > 0;
    },
    async renew(owner, runIds, leaseUntil) {
      if (runIds.length === 0) return [];
      return (await db.query<{ run_id: string }>('run (renew)', renew, [owner, runIds, leaseUntil])).rows.map(
        (r) => r.run_id,
      );
    },
    async finish(runId, owner, status, result, retentionMs, entries = []) {
      const data = encodeRunValue(result);
      const journaled = textList(entries.map((e) => encodeRunValue(e)));
      db.sweepSoon();
      return (
        (
          await db.query('run (finish)', finish, () => [
            runId,
            owner,
            status,
            data,
            db.now() + retentionMs,
            journaled,
            db.now(),
            parkedStep(status, result) ?? null,
          ])
        ).rowCount === 1
      );
    },
    async finishWithEvents(runId, owner, status, result, retentionMs, entries, last) {
      const data = encodeRunValue(result);
      const journaled = textList(entries.map((e) => encodeRunValue(e)));
      db.sweepSoon();
      await events.end.ready();
      let now = 0;
      const row = (
        await db.query<{ logged: string }>('run (finish)', finishWithEvents, () => {
          now = db.now();
          return [runId, owner, status, data, now + retentionMs, journaled, now, ...events.end.values(last, now)];
        })
      ).rows[0];
      if (!row) return false;
      events.end.kept(now);
      // The run's event log had outlived its retention (a long parked run): appended afresh, after the end.
      if (Number(row.logged) === 0) await events.append(runId, last.events, last.keepMs);
      return true;
    },
    async reopen(runId, owner, update) {
      return (
        (
          await db.query('run (reopen)', reopen, [
            runId,
            owner,
            update.leaseUntil,
            update.approvedGate,
            update.deadlineAt,
            db.now(),
          ])
        ).rowCount === 1
      );
    },
    async claimExpired(owner, now, leaseUntil, limit, only) {
      if (!(limit >= 1)) return [];
      const pairs = only ? only.chains.map((c) => `${c.name}|${c.fingerprint}`) : null;
      const claimed = (
        await db.query<RunRow & { previous_owner: string }>('run (claim)', claim, [
          owner,
          now,
          leaseUntil,
          Math.min(Math.floor(limit), 2 ** 31 - 1),
          pairs,
          only?.orphanedBefore ?? -Infinity,
        ])
      ).rows;
      if (claimed.length === 0) return [];
      const entries = new Map<string, string[]>();
      for (const row of (
        await db.query<{ run_id: string; entry: string }>('run (claim)', readJournals, [claimed.map((r) => r.run_id)])
      ).rows) {
        let list = entries.get(row.run_id);
        if (!list) entries.set(row.run_id, (list = []));
        list.push(row.entry);
      }
      return claimed.map((row) => ({
        ...fromRow(row, entries.get(row.run_id) ?? []),
        previousOwner: row.previous_owner,
      }));
    },
    listsByContext: true,
    listRuns: (query) => listRuns(db, { list, listChain, listContext }, query),
    async get(runId) {
      const row = await get(runId, 'run (get)');
      if (!row || (row.expires_at !== null && row.expires_at <= db.now())) return undefined;
      return fromRow(row, row.journal);
    },
    async takeParked(runId, owner, from, update, entry, seen) {
      const data = entry ? encodeRunValue(entry) : null;
      return (
        (
          await db.query('run (take)', takeParked, () => [
            runId,
            owner,
            update.leaseUntil,
            update.deadlineAt,
            from,
            db.now(),
            data,
            seen?.step ?? null,
            seen?.journal ?? null,
          ])
        ).rowCount === 1
      );
    },
    close: async () => {
      // Side by side: behind a partition each waits its own short bound, and they must not add up.
      await Promise.all([events.close(), db.close()]);
    },
    async markRetrying(runId, owner, until) {
      return (await db.query('run (retrying)', markRetrying, [runId, owner, until])).rowCount === 1;
    },
    async requestCancel(runId, reason) {
      return (await db.query('run (cancel)', requestCancel, [runId, reason ?? ''])).rowCount === 1;
    },
    async parkWaiting(runId, owner, result, wakeAt, entries = []) {
      const data = encodeRunValue(result);
      const journaled = textList(entries.map((e) => encodeRunValue(e)));
      return (
        (
          await db.query('run (park)', parkWaiting, [
            runId,
            owner,
            data,
            wakeAt ?? Infinity,
            journaled,
            parkedStep('waiting', result) ?? null,
          ])
        ).rowCount === 1
      );
    },
    async dueWaiting(now, limit, only) {
      if (!(limit >= 1)) return [];
      const pairs = only ? only.chains.map((c) => `${c.name}|${c.fingerprint}`) : null;
      return (
        await db.query<{ run_id: string }>('run (due)', dueWaiting, [
          now,
          Math.min(Math.floor(limit), 2 ** 31 - 1),
          pairs,
        ])
      ).rows.map((r) => r.run_id);
    },
  };
}
