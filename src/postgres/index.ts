/**
 * chainkit/postgres: durable runs, confirmation checkpoints and idempotency on PostgreSQL, so a run
 * survives the death of the process running it
 * ([Durable runs](https://github.com/chainkit-dev/chainkit/blob/main/docs/guides/durable-runs.md))
 * on the database an app already runs.
 *
 * ## Set-up
 *
 * Install `pg` (a peer dependency) and hand `postgresStores` a `pg.Pool` (typed by {@link PostgresPool}:
 * chainkit's declarations need no `@types/pg`). The stores create their
 * tables in a schema of their own (default `chainkit`) on first use, or when you call
 * `await stores.migrate()` at start-up (processes that migrate at once take an advisory lock: the
 * tables are created once). The pool stays yours: `stores.close()` only waits for what the stores
 * started; end the pool yourself after `runner.close()`.
 *
 * ## What each store does
 *
 * - `runs`: the run record, its step journal and its owner's lease. Each step's result is journaled
 *   in one statement, together with its idempotency result; claims (`create`, `claimExpired`,
 *   `reopen`) and `finish` are single statements, so two processes never own one run.
 * - `checkpoints`: a confirmation gate's checkpoint, taken at most once (a reused token says
 *   `already_used`), at most `maxPendingPerContext` pending per user.
 * - `idempotency`: kept results of write calls; a duplicate of a call in flight waits for its
 *   outcome (polling, `pendingWaitMs`), and a durable run re-run after a crash takes over the claim
 *   its dead owner left instead of waiting for it.
 *
 * Every failure of the database (down, unreachable, a statement refused) is `store_unavailable`.
 * Expired rows are deleted by the stores themselves, a bounded batch at most once per `sweepIntervalMs`.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { createRunner } from 'chainkit';
 * import { postgresStores } from 'chainkit/postgres';
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const stores = postgresStores(pool, { schema: 'chainkit' });
 * await stores.migrate(); // optional: otherwise on first use
 * const runner = createRunner({
 *   invoker,
 *   chains,
 *   secret: process.env.CHAINKIT_SECRET,
 *   stores,
 *   recover: { intervalMs: 5_000 },
 * });
 * // …
 * await runner.close();
 * await pool.end();
 * ```
 *
 * @module chainkit/postgres
 */
import { checkOptions, fn, integer, integerMs, timerMs } from '../define/options.js';
import { z } from 'zod';
import type { CheckpointStore, IdempotencyStore } from '../stores/types.js';
import type { RunStore } from '../stores/run-store.js';
import { postgresCheckpointStore } from './checkpoints.js';
import { Db, type PostgresPool } from './db.js';
import { postgresIdempotencyStore } from './idempotency.js';
import { postgresRunStore } from './runs.js';

export type { IdempotencyBeginOptions } from '../stores/types.js';
export type { RunStore } from '../stores/run-store.js';
export type { PostgresPool, PostgresQuery, PostgresQueryResult } from './db.js';

/** Options of {@link postgresStores}. */
export interface PostgresStoresOptions {
  /** The schema holding chainkit's tables (created when missing): letters, digits and `_`. Default `chainkit`. */
  schema?: string;
  /** How long kept idempotency results live. Default 24 h. */
  idempotencyTtlMs?: number;
  /**
   * How long an in-flight marker lives if its process dies mid-call (at least: a marker lives until
   * its call's deadline when that is later), and how long the key of a write whose outcome is
   * unknown stays claimed after its failure. Default 60 s.
   */
  pendingTtlMs?: number;
  /** How long a duplicate waits for the call in flight elsewhere before failing with `conflict`. Default 30 s. */
  pendingWaitMs?: number;
  /** Poll interval while waiting. Default 50 ms. */
  pollMs?: number;
  /**
   * Pending checkpoints kept per trusted context (per user); past it, that context's oldest are deleted. Default 100.
   */
  maxPendingPerContext?: number;
  /** How often, at most, expired rows are deleted (in the background of a write). `Infinity`: never. Default 60 s. */
  sweepIntervalMs?: number;
  /**
   * Prepare each statement once per connection (named statements). Turn off behind a pooler that
   * does not keep them (PgBouncer in transaction mode before 1.21). Default `true`.
   */
  preparedStatements?: boolean;
  /** Clock (expiry, retention). Default `Date.now`. */
  now?: () => number;
  /** Events kept per run for `runner.watch` (the oldest deleted as new ones come). Default 10 000. */
  maxEventsPerRun?: number;
}

/** The PostgreSQL-backed stores, for `createRunner({ stores })`. */
export interface PostgresStores {
  /** Durable runs: `journal(…, complete)` keeps results in `idempotency`, in the same statement. */
  runs: RunStore;
  checkpoints: CheckpointStore;
  idempotency: IdempotencyStore;
  /**
   * Creates the schema and tables unless they exist (otherwise
   * done on first use). Safe to call from many processes at once.
   */
  migrate(): Promise<void>;
  /**
   * Waits for what the stores started (a background sweep), at most 1 s:
   * a silent database never hangs it. The pool stays open: it is yours.
   */
  close(): Promise<void>;
}

const POSTGRES_STORES_OPTIONS = z.object(
  {
    schema: z
      .custom<string>(
        (v) => typeof v === 'string' && /^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(v),
        'Expected `schema` to be a plain identifier: ' +
          'letters, digits and `_`, not starting with a digit, at most 63 characters.',
      )
      .optional(),
    idempotencyTtlMs: integerMs('idempotencyTtlMs').optional(),
    pendingTtlMs: integerMs('pendingTtlMs').optional(),
    pendingWaitMs: timerMs('pendingWaitMs').optional(),
    pollMs: timerMs('pollMs').optional(),
    maxPendingPerContext: integer('maxPendingPerContext', 1).optional(),
    sweepIntervalMs: z
      .custom<number>(
        (v) => typeof v === 'number' && v > 0,
        'Expected `sweepIntervalMs` to be a positive number of ms (or Infinity).',
      )
      .optional(),
    preparedStatements: z.boolean('Expected `preparedStatements` to be true or false.').optional(),
    now: fn('now').optional(),
    maxEventsPerRun: integer('maxEventsPerRun', 1).optional(),
  },
  { error: 'Expected postgresStores options to be an object.' },
);

/**
 * Run, checkpoint and idempotency stores on PostgreSQL, in tables of one schema created on first
 * use. Every claim and finish is one statement; the pool stays yours to end.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * import { postgresStores } from 'chainkit/postgres';
 * const stores = postgresStores(new pg.Pool(), { schema: 'myapp_chainkit' });
 * const runner = createRunner({ invoker, chains, stores });
 * ```
 */
export function postgresStores(pool: PostgresPool, options: PostgresStoresOptions = {}): PostgresStores {
  if (typeof pool?.query !== 'function') throw new TypeError('Expected a pg Pool (new pg.Pool(...)).');
  checkOptions('postgresStores options', POSTGRES_STORES_OPTIONS, options);
  const ttlMs = options.idempotencyTtlMs ?? 24 * 3_600_000;
  const pendingTtlMs = options.pendingTtlMs ?? 60_000;
  const pendingWaitMs = options.pendingWaitMs ?? 30_000;
  const pollMs = options.pollMs ?? 50;
  const perContext = options.maxPendingPerContext ?? 100;
  const sweepMs = options.sweepIntervalMs ?? 60_000;

  const db = new Db(
    pool,
    options.schema ?? 'chainkit',
    options.now ?? Date.now,
    sweepMs,
    options.preparedStatements !== false,
  );
  const idempotency = postgresIdempotencyStore(db, { ttlMs, pendingTtlMs, pendingWaitMs, pollMs });
  const runs = postgresRunStore(db, {
    idempotencyTtlMs: ttlMs,
    idempotency,
    sweepEveryMs: sweepMs,
    ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }),
  });
  return {
    runs,
    checkpoints: postgresCheckpointStore(db, perContext),
    idempotency,
    migrate: () => db.migrate(),
    close: () => runs.close!(), // the event log's LISTEN connection, then what the stores started
  };
}
