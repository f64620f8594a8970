// Checkpoints on PostgreSQL: the same codec as the memory and Redis stores; a take deletes the row
// and leaves a tombstone in the same statement, so a checkpoint is taken at most once and later takes say `used`.
import { decodeCheckpoint, encodeCheckpoint } from '../stores/serialize.js';
import type { CheckpointStore, TakeResult } from '../stores/types.js';
import type { Db } from './db.js';

/**
 * The checkpoint store of `postgresStores()`: tables `checkpoints` and `checkpoints_used`. Bounded
 * per trusted context (`maxPerContext` pending: that context's oldest are deleted first).
 *
 * @example
 * ```ts
 * const checkpoints = postgresCheckpointStore(db, 100);
 * ```
 */
export function postgresCheckpointStore(db: Db, maxPerContext: number): CheckpointStore {
  const { s } = db;
  // Saving clears a tombstone of the same id; past the bound, the context's oldest pending ones go
  // (rows another session is taking or trimming are skipped, never waited for).
  const save = db.sql(`
WITH up AS (
  INSERT INTO ${s}.checkpoints AS c (id, context_hash, data, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (id) DO UPDATE SET context_hash = EXCLUDED.context_hash, data = EXCLUDED.data,
    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
), unused AS (DELETE FROM ${s}.checkpoints_used WHERE id = $1)
DELETE FROM ${s}.checkpoints WHERE id IN (
  SELECT id FROM ${s}.checkpoints WHERE context_hash = $2 AND id <> $1 AND expires_at > $6
  ORDER BY created_at DESC, id DESC OFFSET $7 FOR UPDATE SKIP LOCKED
)`);
  const peek = db.sql(`
SELECT (SELECT data FROM ${s}.checkpoints WHERE id = $1 AND expires_at > $2) AS data,
  EXISTS (SELECT 1 FROM ${s}.checkpoints_used WHERE id = $1 AND expires_at > $2) AS used`);
  const take = db.sql(`
WITH taken AS (DELETE FROM ${s}.checkpoints WHERE id = $1 RETURNING data, expires_at),
used AS (
  INSERT INTO ${s}.checkpoints_used (id, expires_at) SELECT $1, expires_at FROM taken WHERE expires_at > $2
  ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at
)
SELECT data, expires_at > $2 AS live FROM taken`);
  // A separate statement: it sees a take that committed while ours waited for the row.
  const used = db.sql(`SELECT EXISTS (SELECT 1 FROM ${s}.checkpoints_used WHERE id = $1 AND expires_at > $2) AS used`);

  return {
    async save(cp) {
      const data = encodeCheckpoint(cp); // refuses what it cannot keep, before anything is stored
      db.sweepSoon();
      await db.query('checkpoint', save, [
        cp.id,
        cp.contextHash,
        data,
        cp.createdAt,
        cp.expiresAt,
        db.now(),
        maxPerContext - 1,
      ]);
    },
    async peek(id): Promise<TakeResult> {
      const row = (await db.query<{ data: string | null; used: boolean }>('checkpoint', peek, [id, db.now()])).rows[0]!;
      if (row.data !== null) return { status: 'taken', checkpoint: decodeCheckpoint(row.data) };
      return row.used ? { status: 'used' } : { status: 'missing' };
    },
    async take(id): Promise<TakeResult> {
      const now = db.now();
      const row = (await db.query<{ data: string; live: boolean }>('checkpoint', take, [id, now])).rows[0];
      if (row?.live) return { status: 'taken', checkpoint: decodeCheckpoint(row.data) };
      if (row) return { status: 'missing' }; // it had expired: deleted, no tombstone
      const tomb = (await db.query<{ used: boolean }>('checkpoint', used, [id, now])).rows[0]!;
      return tomb.used ? { status: 'used' } : { status: 'missing' };
    },
    close: () => db.close(),
  };
}
