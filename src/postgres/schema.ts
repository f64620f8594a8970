// The tables of chainkit/postgres, created by `migrate()` or on first use: idempotent DDL run under an
// advisory lock, so processes that start together create them once and never trip over each other.
import { createHash } from 'node:crypto';

/** The version of the tables this code writes; kept in `<schema>.meta`. */
export const SCHEMA_VERSION = 8;

/**
 * The schema name as a quoted identifier. Only plain names are accepted (letters, digits and `_`,
 * not starting with a digit, at most 63 bytes): nothing from outside is ever spliced into SQL.
 *
 * @example
 * ```ts
 * quoteSchema('chainkit'); // '"chainkit"'
 * ```
 */
export function quoteSchema(name: string): string {
  if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new TypeError(
      'Expected `schema` to be a plain identifier: ' +
        'letters, digits and `_`, not starting with a digit, at most 63 characters.',
    );
  }
  return `"${name}"`;
}

/** A 32-bit key for the advisory lock of one schema's migration (a number: nothing quoted into the SQL). */
function lockKey(schema: string): number {
  return createHash('sha1').update(schema).digest().readInt32BE(0);
}

/**
 * The whole migration as one multi-statement query: PostgreSQL runs it as one implicit
 * transaction, so the advisory lock taken first is held until every table exists (or all is rolled back).
 *
 * @example
 * ```ts
 * await pool.query(migration('"chainkit"'));
 * ```
 */
export function migration(s: string): string {
  return `
SELECT pg_advisory_xact_lock(1667985780, ${lockKey(s)});
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.runs (
  run_id text PRIMARY KEY,
  status text NOT NULL,
  owner text NOT NULL,
  lease_until double precision NOT NULL,
  deadline_at double precision NOT NULL,
  approved_gate text,
  record text NOT NULL,
  result text,
  expires_at double precision
);
-- Version 2: what a run id is bound to, and what a claim filters on.
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS chain text;
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS fingerprint text;
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS context_hash text;
CREATE INDEX IF NOT EXISTS runs_lease ON ${s}.runs (lease_until) WHERE status = 'running';
CREATE INDEX IF NOT EXISTS runs_expiry ON ${s}.runs (expires_at) WHERE expires_at IS NOT NULL;
-- Version 3: what runner.listRuns pages through, newest first, by status or by chain.
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS started_at double precision;
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS ended_at double precision;
UPDATE ${s}.runs SET started_at = COALESCE((record::jsonb->>'startedAt')::double precision, 0) WHERE started_at IS NULL;
CREATE INDEX IF NOT EXISTS runs_status_started ON ${s}.runs (status, started_at DESC, run_id DESC);
CREATE INDEX IF NOT EXISTS runs_chain_started ON ${s}.runs (chain, status, started_at DESC, run_id DESC);
-- Version 4: a run in flight waiting out a retry (listed as retrying) and a cancel asked of a run in flight.
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS retry_until double precision;
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS cancel_reason text;
-- Version 5: runs parked waiting (a sleep, a waitFor's timeout) by wake-up, kept in lease_until.
CREATE INDEX IF NOT EXISTS runs_wake ON ${s}.runs (lease_until) WHERE status = 'waiting';
-- Version 6: the step a run waiting or in doubt is parked at, which a take checks (NULL: parked before version 6).
ALTER TABLE ${s}.runs ADD COLUMN IF NOT EXISTS parked_step text;
-- Version 7: one user's runs (runner.listRuns({ context })), newest first.
CREATE INDEX IF NOT EXISTS runs_context_started ON ${s}.runs (context_hash, started_at DESC, run_id DESC);
CREATE TABLE IF NOT EXISTS ${s}.run_journal (
  run_id text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  entry text NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
  id text PRIMARY KEY,
  context_hash text NOT NULL,
  data text NOT NULL,
  created_at double precision NOT NULL,
  expires_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_context ON ${s}.checkpoints (context_hash, created_at);
CREATE INDEX IF NOT EXISTS checkpoints_expiry ON ${s}.checkpoints (expires_at);
CREATE TABLE IF NOT EXISTS ${s}.checkpoints_used (
  id text PRIMARY KEY,
  expires_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS checkpoints_used_expiry ON ${s}.checkpoints_used (expires_at);
CREATE TABLE IF NOT EXISTS ${s}.idempotency (
  key text PRIMARY KEY,
  state text NOT NULL,
  value text,
  run_id text,
  owner text,
  expires_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS idempotency_expiry ON ${s}.idempotency (expires_at);
-- Version 8: when a result was kept (a 'done' claim's \`at\`): an undo marks only the result it read.
ALTER TABLE ${s}.idempotency ADD COLUMN IF NOT EXISTS kept_at double precision;
CREATE TABLE IF NOT EXISTS ${s}.meta (key text PRIMARY KEY, value text NOT NULL);
INSERT INTO ${s}.meta (key, value) VALUES ('version', '${SCHEMA_VERSION}')
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value WHERE ${s}.meta.value::int < ${SCHEMA_VERSION};
`;
}
