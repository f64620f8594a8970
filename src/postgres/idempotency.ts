// Idempotency on PostgreSQL, with the Redis store's semantics: a pending marker that lapses after
// `pendingTtlMs` if its process dies, waiters that poll (cancelable) and get `conflict` after
// `pendingWaitMs`, and the key of a write whose outcome is unknown kept claimed, answering its failure.
import { RunAbortReason, ToolFailure, type Classified } from '../errors/classify.js';
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
type Row = { state: 'n' | 'p' | 'd' | 'u'; value: string | null };

const conflict = (message: string): Error => Object.assign(new Error(message), { status: 409 });
const unknownFailure = (value: string | null): ToolFailure => new ToolFailure({ ...(JSON.parse(value ?? '{}') as Classified), outcomeUnknown: true });
const never = (): Promise<never> => new Promise<never>(() => {});

/**
 * The idempotency store of `postgresStores()`: table `idempotency`. `begin(key, { runId, owner,
 * takeOver })` records the run in the pending marker and may take over its dead owner's claim
 * (see `IdempotencyBeginOptions`).
 *
 * @example
 * ```ts
 * const idempotency = postgresIdempotencyStore(db, { ttlMs: 86_400_000, pendingTtlMs: 60_000, pendingWaitMs: 30_000, pollMs: 50 });
 * ```
 */
export function postgresIdempotencyStore(db: Db, timing: PostgresIdempotencyTiming): IdempotencyStore {
  const { s } = db;
  // One statement claims the key (new, lapsed, or a dead owner's claim taken over) or reads it. A row
  // another session inserted after this statement's snapshot shows as nothing: then it runs again.
  const begin = db.sql(`
WITH claim AS (
  INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at) VALUES ($1, 'p', NULL, $3, $4, $5)
  ON CONFLICT (key) DO UPDATE SET state = 'p', value = NULL, run_id = EXCLUDED.run_id, owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
  WHERE i.expires_at <= $2 OR ($6::boolean AND i.state = 'p' AND i.run_id = EXCLUDED.run_id AND i.owner <> EXCLUDED.owner)
  RETURNING 1
)
SELECT 'n'::text AS state, NULL::text AS value FROM claim
UNION ALL
SELECT state, value FROM ${s}.idempotency WHERE key = $1 AND expires_at > $2 AND NOT EXISTS (SELECT 1 FROM claim)`);
  const read = db.sql(`SELECT state, value FROM ${s}.idempotency WHERE key = $1 AND expires_at > $2`);
  const complete = db.sql(`
INSERT INTO ${s}.idempotency AS i (key, state, value, run_id, owner, expires_at) VALUES ($1, 'd', $2, NULL, NULL, $3)
ON CONFLICT (key) DO UPDATE SET state = 'd', value = EXCLUDED.value, run_id = NULL, owner = NULL, expires_at = EXCLUDED.expires_at`);
  const release = db.sql(`DELETE FROM ${s}.idempotency WHERE key = $1`);
  const keepUnknown = db.sql(`UPDATE ${s}.idempotency SET state = 'u', value = $2, expires_at = $3 WHERE key = $1`);

  /**
   * Waits for a call in flight elsewhere: its result, its failure (row gone) or, after
   * `pendingWaitMs`, `conflict`. `cancel` stops the polling at once; `settled` then stays pending.
   */
  const waitFor = (key: string): Extract<IdempotencyClaim, { status: 'pending' }> => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let wake: () => void = () => {};
    const poll = async (): Promise<unknown> => {
      const until = db.now() + timing.pendingWaitMs;
      while (db.now() < until) {
        await new Promise<void>((r) => {
          wake = r;
          timer = setTimeout(r, timing.pollMs);
        });
        if (stopped) return never();
        let row: Row | undefined;
        try {
          row = (await db.query<Row>('idempotency', read, [key, db.now()])).rows[0];
        } catch (error) {
          if (stopped) return never();
          throw error;
        }
        if (stopped) return never();
        if (row === undefined) throw conflict(`The duplicate call with idempotency key ${key} failed elsewhere; nothing was kept.`);
        if (row.state === 'd') return row.value === null ? undefined : JSON.parse(row.value);
        if (row.state === 'u') throw unknownFailure(row.value);
      }
      throw conflict(`A call with idempotency key ${key} is still in flight elsewhere after ${timing.pendingWaitMs} ms.`);
    };
    return {
      status: 'pending',
      settled: poll(),
      cancel: () => {
        stopped = true;
        clearTimeout(timer);
        wake();
      },
    };
  };

  const store: IdempotencyStore & { close(): Promise<void> } = {
    async begin(key, run?: IdempotencyBeginOptions): Promise<IdempotencyClaim> {
      db.sweepSoon();
      for (let round = 0; ; round++) {
        const values = (): unknown[] => {
          const now = db.now();
          return [key, now, run?.runId ?? null, run?.owner ?? null, now + timing.pendingTtlMs, run?.takeOver === true];
        };
        const row = (await db.query<Row>('idempotency', begin, values)).rows[0];
        if (row === undefined) {
          // Claimed or released by another session meanwhile: ask again (a few times; then the key is too contended).
          if (round < 20) continue;
          throw conflict(`The idempotency key ${key} kept changing while it was being claimed.`);
        }
        if (row.state === 'n') return { status: 'new' };
        if (row.state === 'd') return { status: 'done', value: row.value === null ? undefined : JSON.parse(row.value) };
        if (row.state === 'u') {
          const settled = Promise.reject(unknownFailure(row.value));
          settled.catch(() => undefined); // the waiter attaches later: never an unhandled rejection
          return { status: 'pending', settled };
        }
        return waitFor(key);
      }
    },
    async complete(key, value, ttlMs) {
      const kept = JSON.stringify(value) ?? null;
      await db.query('idempotency', complete, () => [key, kept, db.now() + (ttlMs ?? timing.ttlMs)]);
    },
    async fail(key, error, outcomeUnknown) {
      if (!outcomeUnknown) {
        await db.query('idempotency', release, [key]);
        return;
      }
      // The write may still take effect: the key stays claimed for pendingTtlMs, answering with its failure.
      const e: Classified = error instanceof ToolFailure ? error.info : { category: 'timeout', code: 'outcome_unknown', message: error instanceof Error || error instanceof RunAbortReason ? error.message : String(error) };
      await db.query('idempotency', keepUnknown, () => [key, JSON.stringify(e), db.now() + timing.pendingTtlMs]);
    },
    close: () => db.close(),
  };
  return store;
}
