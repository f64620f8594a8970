// Listing durable runs on PostgreSQL (`runner.listRuns`): one ordered index range per status (see
// run-sql.ts), the page's summaries made from each run's result and journal.
import { summarize } from '../stores/run-list.js';
import type { RunListQuery, RunListResult, RunStatus } from '../stores/run-listing.js';
import type { Db, Statement } from './db.js';

/**
 * A page of the runs `query` asks for, newest first: `listContext` when it names contexts, `listChain` when
 * it names a chain, else `list`.
 *
 * @example
 * ```ts
 * const page = await listRuns(db, sql, { statuses: ['failed'], since: 0, until: Infinity, limit: 50 });
 * ```
 */
export async function listRuns(
  db: Db,
  statements: { list: Statement; listChain: Statement; listContext: Statement },
  query: RunListQuery,
): Promise<RunListResult> {
  type Listed = {
    run_id: string;
    chain: string | null;
    status: RunStatus;
    started_at: number;
    ended_at: number | null;
    result: string | null;
    journal: string[];
  };
  const args: unknown[] = [
    query.statuses,
    query.chain ?? null,
    query.since,
    query.until,
    db.now(),
    query.limit + 1,
    query.after?.startedAt ?? Infinity,
    query.after?.runId ?? '',
  ];
  const statement =
    query.contexts !== undefined
      ? statements.listContext
      : query.chain === undefined
        ? statements.list
        : statements.listChain;
  if (query.contexts !== undefined)
    args.push(
      JSON.stringify(query.contexts.map((m) => ('chains' in m ? [m.hash, m.chains, []] : [m.hash, null, m.except]))),
    );
  const rows = (await db.query<Listed>('run (list)', statement, args)).rows;
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
}
