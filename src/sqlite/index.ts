// chainkit/sqlite: what a one-process app learns, kept on disk so it survives a restart.
import Database from 'better-sqlite3';
import type { ToolTransition } from '../observe/trace.js';
import type { LearnedData, LearningStore, TimingSample } from '../stores/types.js';

/** Options of {@link sqliteLearningStore}. */
export interface SqliteLearningOptions {
  /** Transitions kept. Default 10 000. */
  maxTransitions?: number;
  /** Timing samples kept (all tools together). Default 20 000. */
  maxSamples?: number;
}

/**
 * A learning store in a SQLite file (better-sqlite3), bounded on disk: older rows are deleted as
 * new ones arrive. Give it a path (it opens and closes the file) or an open database (yours to close).
 *
 * @example
 * ```ts
 * import { sqliteLearningStore } from 'chainkit/sqlite';
 * const runner = createRunner({ invoker, tools, stores: { metrics: sqliteLearningStore('./chainkit-learning.db') } });
 * await runner.ready; // timing and suggestions resume where the last run left off
 * ```
 */
export function sqliteLearningStore(file: string | Database.Database, options: SqliteLearningOptions = {}): LearningStore {
  const maxT = options.maxTransitions ?? 10_000;
  const maxS = options.maxSamples ?? 20_000;
  const owned = typeof file === 'string';
  const db = owned ? new Database(file) : file;
  if (owned) db.pragma('journal_mode = WAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS chainkit_transitions (id INTEGER PRIMARY KEY AUTOINCREMENT, data TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS chainkit_samples (id INTEGER PRIMARY KEY AUTOINCREMENT, tool TEXT NOT NULL, duration_ms REAL NOT NULL, complexity REAL NOT NULL);
  `);
  const insertT = db.prepare('INSERT INTO chainkit_transitions (data) VALUES (?)');
  const insertS = db.prepare('INSERT INTO chainkit_samples (tool, duration_ms, complexity) VALUES (?, ?, ?)');
  const trimT = db.prepare('DELETE FROM chainkit_transitions WHERE id <= (SELECT MAX(id) FROM chainkit_transitions) - ?');
  const trimS = db.prepare('DELETE FROM chainkit_samples WHERE id <= (SELECT MAX(id) FROM chainkit_samples) - ?');
  const append = db.transaction((batch: LearnedData) => {
    for (const t of batch.transitions) insertT.run(JSON.stringify(t));
    for (const s of batch.samples) insertS.run(s.tool, s.durationMs, s.complexity);
    trimT.run(maxT);
    trimS.run(maxS);
  });
  return {
    load(): LearnedData {
      const transitions = (db.prepare('SELECT data FROM chainkit_transitions ORDER BY id').all() as { data: string }[]).map((r) => JSON.parse(r.data) as ToolTransition);
      const samples = (db.prepare('SELECT tool, duration_ms AS durationMs, complexity FROM chainkit_samples ORDER BY id').all() as TimingSample[]);
      return { transitions, samples };
    },
    append(batch) {
      append(batch);
    },
    close() {
      if (owned) db.close();
    },
  };
}
