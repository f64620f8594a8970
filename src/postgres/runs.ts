// Durable runs on PostgreSQL. Every claim and finish is one statement (INSERT … ON CONFLICT, UPDATE …
// WHERE … RETURNING): no read-then-write race. A journal write locks its run row (FOR SHARE), so it
// either lands before a take-over or is refused after it; whoever takes a run over reads the journal
// in a statement of its own, after its claim committed, so it sees every entry that was acknowledged.
import { StoreFailure } from '../stores/guard.js';
import { encodeRunValue, storedRun } from '../stores/run-codec.js';
import { steered, summarize } from '../stores/run-list.js';
import type { RunStore } from '../stores/run-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { CreateRunResult, RunStatus, StoredRun } from '../stores/run-store.js';
import type { Db } from './db.js';
import { postgresEventLog } from './run-events.js';

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

const COLUMNS =
  'run_id, chain, fingerprint, context_hash, status, owner, lease_until, deadline_at, approved_gate, record, result, ' +
  'retry_until, cancel_reason';

const fromRow = (row: RunRow, journal: readonly string[]): StoredRun =>
  steered(
    storedRun(
      row.record,
      {
        status: row.status,
        owner: row.owner,
        leaseUntil: row.lease_until,
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
  const { s } = db;
  const insert = db.sql(`
INSERT INTO ${s}.runs AS r
  (run_id, status, owner, lease_until, deadline_at, record, chain, fingerprint, context_hash, started_at)
  VALUES ($1, 'running', $2, $3, $4, $5, $7, $8, $9, $10)
ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, retry_until = NULL
WHERE r.status = 'running' AND r.lease_until < $6 AND (r.chain IS NULL OR r.chain = EXCLUDED.chain)
  AND (r.fingerprint IS NULL OR r.fingerprint = EXCLUDED.fingerprint)
  AND (r.context_hash IS NULL OR EXCLUDED.context_hash IS NULL OR r.context_hash = EXCLUDED.context_hash)
RETURNING (xmax = 0) AS created`);
  const readJournals = db.sql(
    `SELECT run_id, entry FROM ${s}.run_journal WHERE run_id = ANY($1::text[]) ORDER BY run_id, seq`,
  );
  const read = db.sql(`
SELECT ${COLUMNS}, expires_at,
  ARRAY(SELECT entry FROM ${s}.run_journal j WHERE j.run_id = r.run_id ORDER BY seq) AS journal
FROM ${s}.runs r WHERE run_id = $1`);
  const dropExpired = db.sql(`
WITH gone AS (DELETE FROM ${s}.runs WHERE run_id = $1 AND expires_at <= $2 RETURNING run_id)
DELETE FROM ${s}.run_journal WHERE run_id IN (SELECT run_id FROM gone)`);
  const append = `INSERT INTO ${s}.run_journal (run_id, entry)
SELECT run_id, $3 FROM ${s}.runs WHERE run_id = $1 AND owner = $2 AND status = 'running' FOR SHARE`;
  const journal = db.sql(append);
  // The idempotency store's row and encoding, written in the same statement: one round trip per step.
  // It is kept even when the owner lost the run: the call happened, a re-run must find it done.
  const journalAndKeep = db.sql(`
WITH kept AS (
  INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at) VALUES ($4, 'd', $5, NULL, NULL, $6)
  ON CONFLICT (key) DO UPDATE SET state = 'd', value = EXCLUDED.value, run_id = NULL, owner = NULL,
    expires_at = EXCLUDED.expires_at
)
${append}`);
  const renew = db.sql(`
UPDATE ${s}.runs SET lease_until = $3
WHERE run_id = ANY($2::text[]) AND owner = $1 AND status = 'running' RETURNING run_id`);
  // One statement: the end and the entries nobody waited for (ordered as given: seq follows insertion).
  const finish = db.sql(`
WITH f AS (UPDATE ${s}.runs SET status = $3, result = $4, lease_until = 0, expires_at = $5, ended_at = $7,
    retry_until = NULL
  WHERE run_id = $1 AND owner = $2 AND status = 'running' RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry)
  SELECT f.run_id, u.e FROM f, unnest($6::text[]) WITH ORDINALITY AS u(e, i) ORDER BY u.i)
SELECT run_id FROM f`);
  const reopen = db.sql(`
UPDATE ${s}.runs SET status = 'running', owner = $2, lease_until = $3, approved_gate = $4, deadline_at = $5,
  result = NULL, expires_at = NULL, ended_at = NULL
WHERE run_id = $1 AND status = 'awaiting_confirmation' AND expires_at > $6`);
  // SKIP LOCKED: claimers never wait for each other (nor for a journal write), and each row goes to one.
  // With a filter ($5: 'chain|fingerprint' pairs), only runs this runner can continue, or orphaned past $6.
  const claim = db.sql(`
UPDATE ${s}.runs AS r SET owner = $1, lease_until = $3, retry_until = NULL
FROM (SELECT run_id FROM ${s}.runs WHERE status = 'running' AND lease_until < $2
  AND ($5::text[] IS NULL OR chain IS NULL OR (chain || '|' || fingerprint) = ANY($5::text[]) OR deadline_at < $6)
  ORDER BY lease_until LIMIT $4 FOR UPDATE SKIP LOCKED) AS c
WHERE r.run_id = c.run_id
RETURNING r.run_id, r.chain, r.fingerprint, r.context_hash, r.status, r.owner, r.lease_until, r.deadline_at,
  r.approved_gate, r.record, r.result, r.cancel_reason`);

  // Newest first: per status, one ordered range of runs_status_started (runs_chain_started with a
  // chain) read to the page's size, merged. `status = ANY(…)` on the table would make the planner
  // sort every row of the statuses instead. The cursor ($7, $8) is always given (+Infinity at first)
  // so it stays an index condition.
  const listSql = (chain: boolean): string => `
SELECT p.*, ARRAY(SELECT entry FROM ${s}.run_journal j WHERE j.run_id = p.run_id ORDER BY seq) AS journal
FROM (
  SELECT r.run_id, r.chain, r.status, r.started_at, r.ended_at, r.result
  FROM unnest($1::text[]) AS st(status) CROSS JOIN LATERAL (
    SELECT run_id, chain, st.status AS status, started_at, ended_at, result FROM ${s}.runs
    WHERE status = (CASE WHEN st.status = 'retrying' THEN 'running' ELSE st.status END)
      AND (retry_until IS NOT NULL) = (st.status = 'retrying')
      ${chain ? 'AND chain = $2' : 'AND $2::text IS NULL'} AND started_at >= $3 AND started_at < $4
      AND (started_at, run_id) < ($7::double precision, $8::text) AND (expires_at IS NULL OR expires_at > $5)
    ORDER BY started_at DESC, run_id DESC LIMIT $6
  ) r
  ORDER BY r.started_at DESC, r.run_id DESC LIMIT $6
) p
ORDER BY p.started_at DESC, p.run_id DESC`;
  const list = db.sql(listSql(false));
  const listChain = db.sql(listSql(true));
  const markRetrying = db.sql(
    `UPDATE ${s}.runs SET retry_until = $3 WHERE run_id = $1 AND owner = $2 AND status = 'running'`,
  );
  const requestCancel = db.sql(`UPDATE ${s}.runs SET cancel_reason = $2 WHERE run_id = $1 AND status = 'running'`);
  // A parked run ($5: its status, never 'running') taken back by
  // one decision, its entry ($7) journaled in the same statement.
  const takeParked = db.sql(`
WITH t AS (UPDATE ${s}.runs SET status = 'running', owner = $2, lease_until = $3, deadline_at = $4, result = NULL,
    expires_at = NULL, ended_at = NULL
  WHERE run_id = $1 AND status = $5 AND status <> 'running' AND (expires_at IS NULL OR expires_at > $6)
  RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry) SELECT t.run_id, $7::text FROM t WHERE $7::text IS NOT NULL)
SELECT run_id FROM t`);

  // A run parked waiting: its wake-up in lease_until (Infinity: only a signal takes it), kept until taken.
  const parkWaiting = db.sql(`
WITH f AS (UPDATE ${s}.runs SET status = 'waiting', result = $3, lease_until = $4, expires_at = NULL, ended_at = NULL,
    retry_until = NULL
  WHERE run_id = $1 AND owner = $2 AND status = 'running' RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry)
  SELECT f.run_id, u.e FROM f, unnest($5::text[]) WITH ORDINALITY AS u(e, i) ORDER BY u.i)
SELECT run_id FROM f`);
  const dueWaiting = db.sql(`
SELECT run_id FROM ${s}.runs WHERE status = 'waiting' AND lease_until <= $1
  AND ($3::text[] IS NULL OR chain IS NULL OR (chain || '|' || fingerprint) = ANY($3::text[]))
ORDER BY lease_until LIMIT $2`);

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
        await db.query<{ created: boolean }>('run (create)', insert, [
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
        if (row.status === 'running' && row.owner === record.owner)
          return { status: 'taken', run: fromRow(row, row.journal) };
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

  return {
    idempotency: options.idempotency,
    events,
    async create(record, now) {
      const data = encodeRunValue(record);
      return create(data, record, now);
    },
    async journal(runId, owner, entry, complete) {
      const data = encodeRunValue(entry);
      let kept: string | null | undefined;
      if (complete) {
        try {
          kept = JSON.stringify(complete.value) ?? null;
        } catch {
          kept = undefined; // a result JSON cannot hold is not kept, as by the idempotency store itself
        }
      }
      db.sweepSoon();
      const done =
        kept === undefined
          ? await db.query('run (journal)', journal, [runId, owner, data])
          : await db.query('run (journal)', journalAndKeep, () => [
              runId,
              owner,
              data,
              complete!.key,
              kept,
              db.now() + (complete!.ttlMs ?? options.idempotencyTtlMs),
            ]);
      return done.rowCount === 1;
    },
    async renew(owner, runIds, leaseUntil) {
      if (runIds.length === 0) return [];
      return (await db.query<{ run_id: string }>('run (renew)', renew, [owner, runIds, leaseUntil])).rows.map(
        (r) => r.run_id,
      );
    },
    async finish(runId, owner, status, result, retentionMs, entries = []) {
      const data = encodeRunValue(result);
      const journaled = entries.map((e) => encodeRunValue(e));
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
          ])
        ).rowCount === 1
      );
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
        await db.query<RunRow>('run (claim)', claim, [
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
      return claimed.map((row) => fromRow(row, entries.get(row.run_id) ?? []));
    },
    async listRuns(query) {
      type Listed = {
        run_id: string;
        chain: string | null;
        status: RunStatus;
        started_at: number;
        ended_at: number | null;
        result: string | null;
        journal: string[];
      };
      const args = [
        query.statuses,
        query.chain ?? null,
        query.since,
        query.until,
        db.now(),
        query.limit + 1,
        query.after?.startedAt ?? Infinity,
        query.after?.runId ?? '',
      ];
      const rows = (await db.query<Listed>('run (list)', query.chain === undefined ? list : listChain, args)).rows;
      const runs = rows.slice(0, query.limit).map((r) =>
        summarize(
          {
            runId: r.run_id,
            chain: r.chain ?? '',
            status: r.status,
            startedAt: r.started_at,
            ...(r.ended_at !== null && { endedAt: r.ended_at }),
          },
          r.result,
          r.journal,
        ),
      );
      return { runs, more: rows.length > query.limit };
    },
    async get(runId) {
      const row = await get(runId, 'run (get)');
      if (!row || (row.expires_at !== null && row.expires_at <= db.now())) return undefined;
      return fromRow(row, row.journal);
    },
    async takeParked(runId, owner, from, update, entry) {
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
      const journaled = entries.map((e) => encodeRunValue(e));
      return (
        (await db.query('run (park)', parkWaiting, [runId, owner, data, wakeAt ?? Infinity, journaled])).rowCount === 1
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
