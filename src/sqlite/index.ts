/**
 * chainkit/sqlite: what a one-process app learns, kept on disk so it survives a restart.
 *
 * @module chainkit/sqlite
 */
import { createRequire } from 'node:module';
import type { ToolTransition } from '../observe/trace.js';
import type { LearnedData, LearningStore, TimingSample } from '../stores/types.js';

/**
 * A prepared statement, as the SQLite drivers chainkit works with all shape it. chainkit only binds
 * ONE positional parameter per call: the one form better-sqlite3, `node:sqlite` and node-sqlite3-wasm
 * all read the same way (they differ on several parameters: variadic vs an array).
 */
export interface SqliteStatement {
  /** Runs the statement with its parameters (a write). */
  run(...params: any[]): unknown;
  /** Runs the statement and returns every row (a read). */
  all(...params: any[]): unknown[];
  /** node-sqlite3-wasm frees a statement only when it is finalized; called on `close()` when present. */
  finalize?(): unknown;
}

/**
 * An open SQLite database: a better-sqlite3 `Database`, a `node:sqlite` `DatabaseSync` (Node 22.5+)
 * or a node-sqlite3-wasm `Database` (no native code) all satisfy it.
 */
export interface SqliteDatabase {
  /** Runs SQL without parameters (schema set-up). */
  exec(sql: string): unknown;
  /** Compiles a statement. */
  prepare(sql: string): SqliteStatement;
  /** Closes the database (only when the store opened it from a path). */
  close(): unknown;
}

/** Options of {@link sqliteLearningStore}. */
export interface SqliteLearningOptions {
  /** Transitions kept. Default 10 000. */
  maxTransitions?: number;
  /** Timing samples kept (all tools together). Default 20 000. */
  maxSamples?: number;
}

type Opener = new (path: string) => SqliteDatabase;

// Only the path form needs a driver of chainkit's choosing: better-sqlite3 (the documented peer),
// else Node's own `node:sqlite`. Loaded on first use so an app that passes a database needs neither.
function openFile(path: string): SqliteDatabase {
  try {
    const Database = createRequire(import.meta.url)('better-sqlite3') as Opener;
    const db = new Database(path);
    db.exec('PRAGMA journal_mode = WAL');
    return db;
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'MODULE_NOT_FOUND') throw error;
  }
  const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  const nodeSqlite = getBuiltin?.call(process, 'node:sqlite') as { DatabaseSync: Opener } | undefined;
  if (nodeSqlite) {
    const db = new nodeSqlite.DatabaseSync(path);
    db.exec('PRAGMA journal_mode = WAL');
    return db;
  }
  throw new Error(
    'chainkit/sqlite: opening a file by path needs better-sqlite3 (npm i better-sqlite3) ' +
      'or Node 22.5+ (node:sqlite); ' +
      'or pass an open database (better-sqlite3, node:sqlite DatabaseSync, node-sqlite3-wasm).',
  );
}

/**
 * A learning store in a SQLite file, bounded on disk: older rows are deleted as new ones arrive.
 * Give it a path (opened with better-sqlite3, or `node:sqlite` when better-sqlite3 is not installed;
 * the store closes it) or an open database from any of those drivers or node-sqlite3-wasm (yours to
 * close; the store only finalizes its own statements).
 *
 * @example
 * ```ts
 * import { DatabaseSync } from 'node:sqlite';
 * import { sqliteLearningStore } from 'chainkit/sqlite';
 * const runner = createRunner({
 *   invoker,
 *   tools,
 *   stores: { metrics: sqliteLearningStore(new DatabaseSync('./chainkit-learning.db')) },
 * });
 * await runner.ready; // timing and suggestions resume where the last run left off
 * ```
 */
export function sqliteLearningStore(file: string | SqliteDatabase, options: SqliteLearningOptions = {}): LearningStore {
  const maxT = options.maxTransitions ?? 10_000;
  const maxS = options.maxSamples ?? 20_000;
  const owned = typeof file === 'string';
  const db = owned ? openFile(file) : file;
  db.exec(`
    CREATE TABLE IF NOT EXISTS chainkit_transitions (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS chainkit_samples (
      id INTEGER PRIMARY KEY AUTOINCREMENT, tool TEXT NOT NULL, duration_ms REAL NOT NULL, complexity REAL NOT NULL
    );
  `);
  // A whole batch is one JSON parameter, unpacked by SQLite's json_each: one bind form for every driver.
  const insertT = db.prepare('INSERT INTO chainkit_transitions (data) SELECT value FROM json_each(?) ORDER BY key');
  const insertS = db.prepare(
    'INSERT INTO chainkit_samples (tool, duration_ms, complexity) ' +
      "SELECT json_extract(value, '$.tool'), json_extract(value, '$.durationMs'), " +
      "json_extract(value, '$.complexity') FROM json_each(?) ORDER BY key",
  );
  const trimT = db.prepare(
    'DELETE FROM chainkit_transitions WHERE id <= (SELECT MAX(id) FROM chainkit_transitions) - ?',
  );
  const trimS = db.prepare('DELETE FROM chainkit_samples WHERE id <= (SELECT MAX(id) FROM chainkit_samples) - ?');
  const selectT = db.prepare('SELECT data FROM chainkit_transitions ORDER BY id');
  const selectS = db.prepare('SELECT tool, duration_ms AS durationMs, complexity FROM chainkit_samples ORDER BY id');
  const statements = [insertT, insertS, trimT, trimS, selectT, selectS];
  return {
    load(): LearnedData {
      const transitions = (selectT.all() as { data: string }[]).map((r) => JSON.parse(r.data) as ToolTransition);
      const samples = (selectS.all() as TimingSample[]).map((r) => ({
        tool: r.tool,
        durationMs: r.durationMs,
        complexity: r.complexity,
      }));
      return { transitions, samples };
    },
    append(batch) {
      // A savepoint, not BEGIN: it also nests inside a transaction the app has open on its database.
      db.exec('SAVEPOINT chainkit_append');
      try {
        if (batch.transitions.length) insertT.run(JSON.stringify(batch.transitions));
        if (batch.samples.length) insertS.run(JSON.stringify(batch.samples));
        trimT.run(maxT);
        trimS.run(maxS);
        db.exec('RELEASE chainkit_append');
      } catch (error) {
        db.exec('ROLLBACK TO chainkit_append; RELEASE chainkit_append');
        throw error;
      }
    },
    close() {
      for (const s of statements) s.finalize?.();
      if (owned) db.close();
    },
  };
}
