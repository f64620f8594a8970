// Idempotency on PostgreSQL, with the Redis store's semantics: a pending marker that lapses after
// `pendingTtlMs` (or its call's deadline, if later) if its process dies, waiters that poll
// (cancelable, stores/pending.ts) and get `conflict` after `pendingWaitMs`, and the key of a write
// whose outcome is unknown kept claimed, answering its failure, until its late answer is kept
// (`completeLate`) or `pendingTtlMs` passes.
import type { Classified } from '../errors/failure.js';
import { decodeKept, encodeKept } from '../stores/run-codec.js';
import { holdMs, unknownClaim, unknownOutcomeInfo, waitForDuplicate, type KeptOutcome } from '../stores/pending.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';
import type { IdempotencyClaim, IdempotencyStore } from '../stores/types.js';
import type { Db } from './db.js';

/** Timing of the Postgres idempotency store (validated by `postgresStores`). */
export interface PostgresIdempotencyTiming {
  ttlMs: number;
  pendingTtlMs: number;
  pendingWaitMs: number;
  pollMs: number;
}

// state: 'p' in flight, 'd' done (value: the result as JSON, NULL for undefined), 'u' a write whose
// outcome is unknown (value: its failure as JSON). 'n': this call claimed the key.
type Row = { state: 'n' | 'p' | 'd' | 'u' | 'x'; value: string | null; kept_at: number | null };

const conflict = (message: string): Error => Object.assign(new Error(message), { status: 409 });

/**
 * The idempotency store of `postgresStores()`: table `idempotency`. `begin(key, { runId, owner,
 * takeOver })` records the run in the pending marker and may take over its dead owner's claim
 * (see `IdempotencyBeginOptions`).
 *
 * @example
 * ```ts
 * const idempotency = postgresIdempotencyStore(db, {
 *   ttlMs: 86_400_000,
 *   pendingTtlMs: 60_000,
 *   pendingWaitMs: 30_000,
 *   pollMs: 50,
 * });
 * ```
 */
export function postgresIdempotencyStore(db: Db, timing: PostgresIdempotencyTiming): IdempotencyStore {
  const { s } = db;
  // One statement claims the key (new, lapsed, or a dead owner's claim taken over) or reads it. A row
  // another session inserted after this statement's snapshot shows as nothing: then it runs again.
  const begin = db.sql(`
WITH claim AS (
  INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at) VALUES ($1, 'p', NULL, $3, $4, $5)
  ON CONFLICT (key) DO UPDATE SET state = 'p', value = NULL, run_id = EXCLUDED.run_id, owner = EXCLUDED.owner,
    expires_at = EXCLUDED.expires_at
  WHERE i.expires_at <= $2
    OR ($6::boolean AND i.state = 'p' AND i.run_id = EXCLUDED.run_id AND i.owner <> EXCLUDED.owner)
  RETURNING 1
)
SELECT 'n'::text AS state, NULL::text AS value, NULL::double precision AS kept_at FROM claim
UNION ALL
SELECT state, value, kept_at FROM ${s}.idempotency
WHERE key = $1 AND expires_at > $2 AND NOT EXISTS (SELECT 1 FROM claim)`);
  const read = db.sql(`SELECT state, value, kept_at FROM ${s}.idempotency WHERE key = $1 AND expires_at > $2`);
  const complete = db.sql(`
INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at, kept_at)
VALUES ($1, 'd', $2, NULL, NULL, $3, $4)
ON CONFLICT (key) DO UPDATE SET state = 'd', value = EXCLUDED.value, run_id = NULL, owner = NULL,
  expires_at = EXCLUDED.expires_at, kept_at = EXCLUDED.kept_at`);
  // The late answer of a write whose outcome was unknown: kept unless the key holds a result or a call in flight.
  const completeLate = db.sql(`
INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at, kept_at)
VALUES ($1, 'd', $2, NULL, NULL, $3, $4)
ON CONFLICT (key) DO UPDATE SET state = 'd', value = EXCLUDED.value, run_id = NULL, owner = NULL,
  expires_at = EXCLUDED.expires_at, kept_at = EXCLUDED.kept_at
WHERE i.state = 'u' OR i.expires_at <= $4`);
  // A durable run's call ($2, $3: its run and owner) ends only its own claim: a recovered run's new owner
  // may have taken the key over meanwhile.
  const release = db.sql(`DELETE FROM ${s}.idempotency
WHERE key = $1 AND state NOT IN ('d', 'x') AND ($2::text IS NULL OR (state = 'p' AND run_id = $2 AND owner = $3))`);
  // An undone call's mark ('x') in place of its kept result (or an earlier mark, renewed): `begin` answers
  // `undone`. A key absent or claimed, or holding a result kept at another time than $4 (when given), stays.
  const markUndone = db.sql(`UPDATE ${s}.idempotency SET state = 'x', value = NULL, expires_at = $2
WHERE key = $1 AND state IN ('d', 'x') AND expires_at > $3
  AND ($4::double precision IS NULL OR state = 'x' OR kept_at = $4::double precision)`);
  // Only over its own claim in flight: a late answer already kept ('d') is the outcome and stays.
  const keepUnknown = db.sql(
    `UPDATE ${s}.idempotency SET state = 'u', value = $2, expires_at = $3
WHERE key = $1 AND state = 'p' AND ($4::text IS NULL OR (run_id = $4 AND owner = $5))`,
  );

  const wait = { now: db.now, waitMs: timing.pendingWaitMs, pollMs: timing.pollMs, pendingTtlMs: timing.pendingTtlMs };
  const kept = (row: Row | undefined): KeptOutcome => {
    if (row === undefined) return undefined;
    if (row.state === 'd') return { s: 'd', v: decodeKept(row.value), ...(row.kept_at !== null && { t: row.kept_at }) };
    if (row.state === 'u') return { s: 'u', e: JSON.parse(row.value ?? '{}') as Classified };
    if (row.state === 'x') return { s: 'x' };
    return { s: 'p' };
  };
  const poll = async (key: string): Promise<KeptOutcome> =>
    kept((await db.query<Row>('idempotency', read, [key, db.now()])).rows[0]);

  const store: IdempotencyStore & { close(): Promise<void> } = {
    async begin(key, run?: IdempotencyBeginOptions, holdUntil?: number): Promise<IdempotencyClaim> {
      db.sweepSoon();
      for (let round = 0; ; round++) {
        const values = (): unknown[] => {
          const now = db.now();
          const until = now + holdMs(timing.pendingTtlMs, holdUntil, now);
          return [key, now, run?.runId ?? null, run?.owner ?? null, until, run?.takeOver === true];
        };
        const row = (await db.query<Row>('idempotency', begin, values)).rows[0];
        if (row === undefined) {
          // Claimed or released by another session meanwhile: ask again (a few times; then the key is too contended).
          if (round < 20) continue;
          throw conflict(`The idempotency key ${key} kept changing while it was being claimed.`);
        }
        if (row.state === 'n') return { status: 'new' };
        const entry = kept(row)!;
        if (entry.s === 'd')
          return entry.t === undefined
            ? { status: 'done', value: entry.v }
            : { status: 'done', value: entry.v, at: entry.t };
        if (entry.s === 'u') return unknownClaim(entry.e, timing.pendingTtlMs);
        if (entry.s === 'x') return { status: 'undone' };
        return waitForDuplicate(key, () => poll(key), wait);
      }
    },
    async complete(key, value, ttlMs) {
      const kept = encodeKept(value);
      await db.query('idempotency', complete, () => {
        const now = db.now();
        return [key, kept, now + (ttlMs ?? timing.ttlMs), now];
      });
    },
    async fail(key, error, outcomeUnknown, run) {
      const runId = run?.runId ?? null;
      const owner = run?.owner ?? null;
      if (!outcomeUnknown) {
        await db.query('idempotency', release, [key, runId, owner]);
        return;
      }
      // The write may still take effect: the key stays claimed for pendingTtlMs, answering with its failure.
      const e = JSON.stringify(unknownOutcomeInfo(error));
      await db.query('idempotency', keepUnknown, () => [key, e, db.now() + timing.pendingTtlMs, runId, owner]);
    },
    async markUndone(key, ttlMs, at) {
      await db.query('idempotency', markUndone, () => {
        const now = db.now();
        return [key, now + (ttlMs ?? timing.ttlMs), now, at ?? null];
      });
    },
    async completeLate(key, value, ttlMs) {
      const late = encodeKept(value);
      await db.query('idempotency', completeLate, () => {
        const now = db.now();
        return [key, late, now + (ttlMs ?? timing.ttlMs), now];
      });
    },
    close: () => db.close(),
  };
  return store;
}
