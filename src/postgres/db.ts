// One schema on the user's pool: named statements (parsed once per connection), tables created on
// first use, every failure a `store_unavailable`, and expired rows swept now and then off the hot path.
import { createHash } from 'node:crypto';
import { storeFailure, StoreFailure } from '../stores/guard.js';
import { migration, quoteSchema, SCHEMA_VERSION } from './schema.js';

/** A statement as chainkit/postgres sends it: named (prepared once per connection) or not. */
export interface PostgresQuery {
  /** The name it is prepared under. */
  name?: string;
  /** The SQL. */
  text: string;
  /** The values of `$1`, `$2`, …. */
  values?: unknown[];
}

/** What a statement answers, as far as chainkit/postgres reads it. */
export interface PostgresQueryResult {
  /** The rows returned. */
  rows: unknown[];
  /** Rows inserted, updated or deleted (`null` for statements that count none). */
  rowCount: number | null;
}

/**
 * The pool `postgresStores` takes: a `pg.Pool` (node-postgres 8). Declared here by the one method
 * chainkit/postgres calls, so its declarations need no `@types/pg`; any object whose
 * `query({ name, text, values })` answers `{ rows, rowCount }` as node-postgres does fits.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * const pool: PostgresPool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * const stores = postgresStores(pool, { schema: 'myapp_chainkit' });
 * ```
 */
export interface PostgresPool {
  /** Runs one statement on a connection of the pool. */
  query(query: PostgresQuery): Promise<PostgresQueryResult>;
}

/** A statement's answer with its rows typed by the statement that asked for them. */
export interface Rows<R> {
  rows: R[];
  rowCount: number | null;
}

/** A statement of one schema: its SQL and the name it is prepared under. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** Rows deleted per table per sweep: a sweep stays short, the next one takes the rest. */
const SWEEP_BATCH = 1000;
/**
 * How long `close()` waits for a sweep in flight. A sweep answers in milliseconds; one the database
 * stopped answering (a partition) never settles, and deleting expired rows is not worth a hung shutdown.
 */
const CLOSE_SWEEP_WAIT_MS = 1_000;

/**
 * JSON texts (as `encodeRunValue` writes them) sent as one parameter, read by {@link textRows}: one
 * JSON array of them as they are, rather than a PostgreSQL array (whose literal pg builds by escaping
 * every element with two regular expressions) or a JSON array of strings (every quote escaped again).
 *
 * @example
 * ```ts
 * await db.query('run (journal)', journal, [runId, owner, textList(entries)]);
 * ```
 */
export const textList = (texts: readonly string[]): string => `[${texts.join(',')}]`;

/**
 * The rows `u(e, i)` of a {@link textList} parameter (`$n`): each text `e` and its place `i`, from 1.
 * A `json` element cast to text is its text as sent, byte for byte (`json`, unlike `jsonb`, keeps it).
 *
 * @example
 * ```ts
 * const sql = `INSERT INTO t (entry) SELECT u.e FROM ${textRows('$3')} ORDER BY u.i`;
 * ```
 */
export const textRows = (param: string): string =>
  `(SELECT j::text AS e, i FROM json_array_elements(${param}::json) WITH ORDINALITY AS x(j, i)) AS u`;

/** The pool, the schema and what every store on them shares. */
export class Db {
  /** The schema, quoted. */
  readonly s: string;
  private ready: Promise<void> | undefined;
  private migrated = false;
  private lastSweep = -Infinity;
  private sweeping: Promise<void> | undefined;
  /** A sweep `close()` stopped waiting for: later closes do not wait for it again. */
  private abandoned: Promise<void> | undefined;
  private readonly sweepStatement: Statement;

  constructor(
    readonly pool: PostgresPool,
    readonly schema: string,
    readonly now: () => number,
    private readonly sweepEveryMs: number,
    private readonly prepare = true,
  ) {
    this.s = quoteSchema(schema);
    const s = this.s;
    // Expired rows of every table, a bounded batch each; rows another session holds are skipped, never waited for.
    this.sweepStatement = this.sql(`
WITH i AS (DELETE FROM ${s}.idempotency WHERE key IN
  (SELECT key FROM ${s}.idempotency WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)),
c AS (DELETE FROM ${s}.checkpoints WHERE id IN
  (SELECT id FROM ${s}.checkpoints WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)),
u AS (DELETE FROM ${s}.checkpoints_used WHERE id IN
  (SELECT id FROM ${s}.checkpoints_used WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)),
r AS (DELETE FROM ${s}.runs WHERE run_id IN
  (SELECT run_id FROM ${s}.runs WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING run_id)
DELETE FROM ${s}.run_journal WHERE run_id IN (SELECT run_id FROM r)`);
  }

  /** A statement; its name is a hash of its text, so equal statements share one preparation per connection. */
  sql(text: string): Statement {
    return { name: `ck_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`, text };
  }

  /**
   * Runs a statement (after the tables exist); any failure becomes a `store_unavailable` naming
   * `what`. Values that hold the time are given as a function: read once the tables exist, so a
   * slow first migration does not shorten a TTL.
   */
  async query<R = Record<string, unknown>>(
    what: string,
    statement: Statement,
    values: unknown[] | (() => unknown[]),
  ): Promise<Rows<R>> {
    if (!this.migrated) await this.migrate(what);
    try {
      const args = typeof values === 'function' ? values() : values;
      return (await this.pool.query(
        this.prepare
          ? { name: statement.name, text: statement.text, values: args }
          : { text: statement.text, values: args },
      )) as Rows<R>;
    } catch (error) {
      throw storeFailure(what, error);
    }
  }

  /** Creates the schema and tables unless they exist at this version; concurrent calls share one attempt. */
  migrate(what = 'postgres'): Promise<void> {
    if (this.migrated) return Promise.resolve();
    this.ready ??= this.createTables().then(
      () => {
        this.migrated = true;
      },
      (error: unknown) => {
        this.ready = undefined; // a later call tries again (the server may be back)
        throw error instanceof StoreFailure ? error : storeFailure(what, error);
      },
    );
    return this.ready;
  }

  /** Deletes expired rows at most once per `sweepEveryMs`, in the background (a failure waits for the next one). */
  sweepSoon(): void {
    const at = this.now();
    if (this.sweeping || at - this.lastSweep < this.sweepEveryMs || this.sweepEveryMs === Infinity) return;
    this.lastSweep = at;
    this.sweeping = this.query('postgres (sweep)', this.sweepStatement, [at, SWEEP_BATCH]).then(
      () => {
        this.sweeping = undefined;
      },
      () => {
        this.sweeping = undefined;
      },
    );
  }

  /**
   * Waits for a sweep in flight, at most {@link CLOSE_SWEEP_WAIT_MS}: afterwards the store holds no
   * connection of the pool, unless the database stopped answering (then the pool's own
   * `query_timeout` frees it, or it is freed when bytes pass again).
   */
  async close(): Promise<void> {
    const sweep = this.sweeping;
    if (sweep === undefined || sweep === this.abandoned) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, CLOSE_SWEEP_WAIT_MS, false)));
    const done = await Promise.race([sweep.then(() => true), waited]);
    clearTimeout(timer);
    if (!done) this.abandoned = sweep;
  }

  // A process that finds the tables at its version runs no DDL (and takes no lock); otherwise one
  // multi-statement query creates what is missing under an advisory lock.
  private async createTables(): Promise<void> {
    const found = (await this.pool.query({
      text: 'SELECT to_regclass($1) IS NOT NULL AS present',
      values: [`${this.s}.meta`],
    })) as Rows<{ present: boolean }>;
    if (found.rows[0]?.present) {
      const version = (await this.pool.query({
        text: `SELECT value FROM ${this.s}.meta WHERE key = 'version'`,
      })) as Rows<{ value: string }>;
      if (Number(version.rows[0]?.value) >= SCHEMA_VERSION) return;
    }
    await this.pool.query({ text: migration(this.s) });
  }
}
