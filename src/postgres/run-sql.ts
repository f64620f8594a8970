// The statements of the PostgreSQL run store (runs.ts), prepared once per store: each claim and
// finish is one statement, so no read-then-write race (see runs.ts).
import { textRows, type Db } from './db.js';

/** The columns a run is read with. */
const COLUMNS =
  'run_id, chain, fingerprint, context_hash, status, owner, lease_until, deadline_at, approved_gate, record, result, ' +
  'retry_until, cancel_reason';

/**
 * The run store's statements on `db`'s schema, by what they do.
 *
 * @example
 * ```ts
 * const { insert, read } = runStatements(db);
 * ```
 */
export function runStatements(db: Db) {
  const { s } = db;
  // `old`: the owner before this statement (a take-over reports it), read in the statement's snapshot.
  const insert = db.sql(`
WITH old AS (SELECT owner FROM ${s}.runs WHERE run_id = $1)
INSERT INTO ${s}.runs AS r
  (run_id, status, owner, lease_until, deadline_at, record, chain, fingerprint, context_hash, started_at)
  VALUES ($1, 'running', $2, $3, $4, $5, $7, $8, $9, $10)
ON CONFLICT (run_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, retry_until = NULL
WHERE r.status = 'running' AND r.lease_until < $6 AND (r.chain IS NULL OR r.chain = EXCLUDED.chain)
  AND (r.fingerprint IS NULL OR r.fingerprint = EXCLUDED.fingerprint)
  AND (r.context_hash IS NULL OR EXCLUDED.context_hash IS NULL OR r.context_hash = EXCLUDED.context_hash)
RETURNING (xmax = 0) AS created, (SELECT owner FROM old) AS previous_owner`);
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
  // The entries in order (seq follows insertion), all or none: none when the owner no longer holds the run.
  const append = `INSERT INTO ${s}.run_journal (run_id, entry)
SELECT o.run_id, u.e
FROM (SELECT run_id FROM ${s}.runs WHERE run_id = $1 AND owner = $2 AND status = 'running' FOR SHARE) o,
  ${textRows('$3')} ORDER BY u.i`;
  const journal = db.sql(append);
  // The idempotency store's row and encoding, written in the same statement: one round trip per step.
  // It is kept even when the owner lost the run: the call happened, a re-run must find it done.
  const journalAndKeep = db.sql(`
WITH kept AS (
  INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at, kept_at)
  VALUES ($4, 'd', $5, NULL, NULL, $6, $7)
  ON CONFLICT (key) DO UPDATE SET state = 'd', value = EXCLUDED.value, run_id = NULL, owner = NULL,
    expires_at = EXCLUDED.expires_at, kept_at = EXCLUDED.kept_at
)
${append}`);
  const renew = db.sql(`
UPDATE ${s}.runs SET lease_until = $3
WHERE run_id = ANY($2::text[]) AND owner = $1 AND status = 'running' RETURNING run_id`);
  // One statement: the end and the entries nobody waited for (ordered as given: seq follows insertion).
  // `f` yields the run's row when this owner ended it ($1 … $7); the last events may ride on it (run-events.ts).
  const endCtes = (parked: string): string => `f AS (UPDATE ${s}.runs SET status = $3, result = $4, lease_until = 0,
    expires_at = $5, ended_at = $7, retry_until = NULL, parked_step = ${parked}
  WHERE run_id = $1 AND owner = $2 AND status = 'running' RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry)
  SELECT f.run_id, u.e FROM f, ${textRows('$6')} ORDER BY u.i)`;
  // $8: the step of a run parked in doubt (NULL for an end); with events, a run ends (never parks in doubt).
  const finishCtes = endCtes('NULL');
  const finish = db.sql(`WITH ${endCtes('$8')}
SELECT run_id FROM f`);
  const reopen = db.sql(`
UPDATE ${s}.runs SET status = 'running', owner = $2, lease_until = $3, approved_gate = $4, deadline_at = $5,
  result = NULL, expires_at = NULL, ended_at = NULL
WHERE run_id = $1 AND status = 'awaiting_confirmation' AND expires_at > $6`);
  // SKIP LOCKED: claimers never wait for each other (nor for a journal write), and each row goes to one.
  // With a filter ($5: 'chain|fingerprint' pairs), only runs this runner can continue, or orphaned past $6.
  const claim = db.sql(`
UPDATE ${s}.runs AS r SET owner = $1, lease_until = $3, retry_until = NULL
FROM (SELECT run_id, owner AS previous_owner FROM ${s}.runs WHERE status = 'running' AND lease_until < $2
  AND ($5::text[] IS NULL OR chain IS NULL OR (chain || '|' || fingerprint) = ANY($5::text[]) OR deadline_at < $6)
  ORDER BY lease_until LIMIT $4 FOR UPDATE SKIP LOCKED) AS c
WHERE r.run_id = c.run_id
RETURNING r.run_id, r.chain, r.fingerprint, r.context_hash, r.status, r.owner, r.lease_until, r.deadline_at,
  r.approved_gate, r.record, r.result, r.cancel_reason, c.previous_owner`);

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
  // One user's runs: per context match ($9, JSON: [hash, its chains or null, the chains it excludes]), one
  // ordered range of runs_context_started, the chain, statuses (and filter's chain) checked on the rows it
  // reads. A user's runs are few beside everyone's, so no range per status.
  const listContext = db.sql(`
SELECT p.*, ARRAY(SELECT entry FROM ${s}.run_journal j WHERE j.run_id = p.run_id ORDER BY seq) AS journal
FROM (
  SELECT r.run_id, r.chain, r.status, r.started_at, r.ended_at, r.result
  FROM json_array_elements($9::json) AS cx(m) CROSS JOIN LATERAL (
    SELECT run_id, chain, CASE WHEN status = 'running' AND retry_until IS NOT NULL THEN 'retrying' ELSE status END
        AS status, started_at, ended_at, result FROM ${s}.runs
    WHERE context_hash = cx.m->>0
      AND (CASE WHEN json_typeof(cx.m->1) = 'array'
        THEN chain IN (SELECT json_array_elements_text(cx.m->1))
        ELSE chain NOT IN (SELECT json_array_elements_text(cx.m->2)) END)
      AND (CASE WHEN status = 'running' AND retry_until IS NOT NULL THEN 'retrying' ELSE status END) = ANY($1::text[])
      AND ($2::text IS NULL OR chain = $2) AND started_at >= $3 AND started_at < $4
      AND (started_at, run_id) < ($7::double precision, $8::text) AND (expires_at IS NULL OR expires_at > $5)
    ORDER BY started_at DESC, run_id DESC LIMIT $6
  ) r
  ORDER BY r.started_at DESC, r.run_id DESC LIMIT $6
) p
ORDER BY p.started_at DESC, p.run_id DESC`);
  const markRetrying = db.sql(
    `UPDATE ${s}.runs SET retry_until = $3 WHERE run_id = $1 AND owner = $2 AND status = 'running'`,
  );
  const requestCancel = db.sql(`UPDATE ${s}.runs SET cancel_reason = $2 WHERE run_id = $1 AND status = 'running'`);
  // A parked run ($5: its status, never 'running') taken back by one decision, its entry ($7) journaled
  // in the same statement; with $8, only while still parked at that step (a run parked before the column
  // existed: by its journal alone) with $9 journal entries.
  const takeParked = db.sql(`
WITH t AS (UPDATE ${s}.runs SET status = 'running', owner = $2, lease_until = $3, deadline_at = $4, result = NULL,
    expires_at = NULL, ended_at = NULL, parked_step = NULL
  WHERE run_id = $1 AND status = $5 AND status <> 'running' AND (expires_at IS NULL OR expires_at > $6)
    AND ($8::text IS NULL OR ((parked_step IS NULL OR parked_step = $8::text)
      AND (SELECT count(*) FROM ${s}.run_journal WHERE run_id = $1) = $9::bigint))
  RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry) SELECT t.run_id, $7::text FROM t WHERE $7::text IS NOT NULL)
SELECT run_id FROM t`);

  // A run parked waiting: its wake-up in lease_until (Infinity: only a signal takes it), kept until taken.
  const parkWaiting = db.sql(`
WITH f AS (UPDATE ${s}.runs SET status = 'waiting', result = $3, lease_until = $4, expires_at = NULL, ended_at = NULL,
    retry_until = NULL, parked_step = $6
  WHERE run_id = $1 AND owner = $2 AND status = 'running' RETURNING run_id),
j AS (INSERT INTO ${s}.run_journal (run_id, entry)
  SELECT f.run_id, u.e FROM f, ${textRows('$5')} ORDER BY u.i)
SELECT run_id FROM f`);
  const dueWaiting = db.sql(`
SELECT run_id FROM ${s}.runs WHERE status = 'waiting' AND lease_until <= $1
  AND ($3::text[] IS NULL OR chain IS NULL OR (chain || '|' || fingerprint) = ANY($3::text[]))
ORDER BY lease_until LIMIT $2`);
  return {
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
  };
}
