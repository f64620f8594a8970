// Listing durable runs: the query every run store answers, the summary it returns, and the cursor
// (opaque to callers) that pages through them newest first, ties broken by run id.
import { fromBase64Url, toBase64Url } from '../util/sha256.js';
import { decodeRunValue } from './run-codec.js';
import type { JournalEntry, StoredRun } from './run-store.js';
import type { RunListAfter, RunListQuery, RunStatus, RunSummary } from './run-listing.js';

/** Every run status, in the order a listing without a status filter covers them. */
export const RUN_STATUSES: readonly RunStatus[] = [
  'running',
  'awaiting_confirmation',
  'completed',
  'failed',
  'declined',
  'retrying',
  'in_doubt',
  'waiting',
];

/** What `runner.listRuns` lists: every field optional. */
export interface ListRunsFilter {
  /** One status or several (any of them). Default: all. */
  status?: RunStatus | readonly RunStatus[];
  /** Only the runs of this chain (by name). */
  chain?: string;
  /** Only runs started at or after this time (epoch ms or a Date). */
  since?: number | Date;
  /** Only runs started before this time (epoch ms or a Date). */
  until?: number | Date;
  /** Runs per page, 1 to 1 000. Default 50. */
  limit?: number;
  /** The `cursor` of the previous page: the next page starts after its last run. */
  cursor?: string;
  /**
   * Only the runs started with this trusted context (a user's own runs), compared as `getRun`'s
   * `{ context }` is. Absent: every run (an operator's view). `undefined` or `null` throws.
   */
  context?: object;
}

/** One page of `runner.listRuns`: `cursor` is present when more runs may follow. */
export interface RunPage {
  runs: RunSummary[];
  cursor?: string;
}

/**
 * A run's summary from what a store keeps: the run's status and times, its encoded result
 * (`undefined` while running) and its encoded journal entries.
 *
 * @example
 * ```ts
 * const s = summarize({ runId, chain, status, startedAt, endedAt }, resultText, journalTexts);
 * ```
 */
export function summarize(
  run: { runId: string; chain: string; status: RunStatus; startedAt: number; endedAt?: number | undefined },
  result: string | null | undefined,
  journal: readonly string[],
): RunSummary {
  let steps = 0;
  for (const text of journal) {
    const e = decodeRunValue(text) as JournalEntry;
    // marks are not steps
    if (e.compensation === undefined && e.started === undefined && e.decision === undefined) steps++;
  }
  const summary: RunSummary = {
    runId: run.runId,
    chain: run.chain,
    status: run.status,
    startedAt: run.startedAt,
    steps,
  };
  const ended = run.status === 'completed' || run.status === 'failed' || run.status === 'declined';
  if (ended && run.endedAt !== undefined && Number.isFinite(run.endedAt)) summary.endedAt = run.endedAt;
  if (
    result !== undefined &&
    result !== null &&
    result !== '' &&
    (run.status === 'failed' || run.status === 'awaiting_confirmation')
  ) {
    const r = decodeRunValue(result) as {
      error?: { category?: unknown; code?: unknown };
      confirmation?: { step?: unknown; prompt?: unknown };
    } | null;
    if (run.status === 'failed' && r?.error && typeof r.error.category === 'string' && typeof r.error.code === 'string')
      summary.error = { category: r.error.category, code: r.error.code };
    if (run.status === 'awaiting_confirmation' && r?.confirmation && typeof r.confirmation.step === 'string') {
      summary.awaiting = {
        step: r.confirmation.step,
        question: typeof r.confirmation.prompt === 'string' ? r.confirmation.prompt : '',
      };
    }
  }
  if (result !== undefined && result !== null && result !== '' && run.status === 'in_doubt') {
    const first = (
      decodeRunValue(result) as { inDoubt?: { step?: unknown; tool?: unknown; startedAt?: unknown }[] } | null
    )?.inDoubt?.[0];
    if (
      first &&
      typeof first.step === 'string' &&
      typeof first.tool === 'string' &&
      typeof first.startedAt === 'number'
    )
      summary.inDoubt = { step: first.step, tool: first.tool, startedAt: first.startedAt };
  }
  if (result !== undefined && result !== null && result !== '' && run.status === 'waiting') {
    const w = (decodeRunValue(result) as { waiting?: { step?: unknown; until?: unknown; signal?: unknown } } | null)
      ?.waiting;
    if (w && typeof w.step === 'string')
      summary.waiting = {
        step: w.step,
        ...(typeof w.until === 'number' && { until: w.until }),
        ...(typeof w.signal === 'string' && { signal: w.signal }),
      };
  }
  return summary;
}

/**
 * Orders summaries newest first, ties by run id (descending): the order every store pages in.
 *
 * @example
 * ```ts
 * rows.sort(newestFirst);
 * ```
 */
export function newestFirst(a: RunListAfter, b: RunListAfter): number {
  if (a.startedAt !== b.startedAt) return b.startedAt - a.startedAt;
  return a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0;
}

/** Whether `run` comes after `after` in listing order (so belongs to the next page). */
export function isAfter(run: RunListAfter, after: RunListAfter | undefined): boolean {
  return after === undefined || newestFirst(after, run) < 0;
}

/**
 * The cursor of the page that ends with `last`.
 *
 * @example
 * ```ts
 * const cursor = encodeRunCursor({ startedAt: 1_700_000_000_000, runId: 'r1' });
 * ```
 */
export function encodeRunCursor(last: RunListAfter): string {
  // no Buffer: the main entry runs on Deno and workerd too
  return toBase64Url(new TextEncoder().encode(JSON.stringify([1, last.startedAt, last.runId])));
}

/**
 * Reads a cursor made by {@link encodeRunCursor}; throws a `TypeError` for anything else.
 *
 * @example
 * ```ts
 * const after = decodeRunCursor(page.cursor);
 * ```
 */
function decodeRunCursor(cursor: string): RunListAfter {
  let parsed: unknown;
  try {
    parsed =
      typeof cursor === 'string' && /^[A-Za-z0-9_-]{1,2000}$/.test(cursor)
        ? JSON.parse(new TextDecoder().decode(fromBase64Url(cursor) ?? new Uint8Array()))
        : undefined;
  } catch {
    parsed = undefined;
  }
  if (
    Array.isArray(parsed) &&
    parsed.length === 3 &&
    parsed[0] === 1 &&
    Number.isFinite(parsed[1]) &&
    typeof parsed[2] === 'string' &&
    parsed[2] !== ''
  ) {
    return { startedAt: parsed[1] as number, runId: parsed[2] };
  }
  throw new TypeError('Malformed `cursor`: pass the `cursor` of a page returned by listRuns(), unchanged.');
}

const time = (value: unknown, what: string): number => {
  const t = value instanceof Date ? value.getTime() : value;
  if (typeof t !== 'number' || !Number.isFinite(t))
    throw new TypeError(`Expected \`${what}\` to be a Date or epoch ms.`);
  return t;
};

/**
 * Checks a `listRuns` filter and turns it into the query stores answer.
 *
 * @example
 * ```ts
 * const query = listQuery({ status: 'awaiting_confirmation' });
 * ```
 */
export function listQuery(filter: ListRunsFilter = {}): RunListQuery {
  if (typeof filter !== 'object' || filter === null) throw new TypeError('Expected a listRuns filter object.');
  const raw =
    filter.status === undefined ? RUN_STATUSES : typeof filter.status === 'string' ? [filter.status] : filter.status;
  if (!Array.isArray(raw) || raw.length === 0 || !raw.every((s) => RUN_STATUSES.includes(s as RunStatus))) {
    throw new TypeError(`Expected \`status\` to be one or several of ${RUN_STATUSES.join(', ')}.`);
  }
  const statuses = [...new Set(raw as RunStatus[])];
  if (filter.chain !== undefined && (typeof filter.chain !== 'string' || filter.chain === ''))
    throw new TypeError('Expected `chain` to be a chain name.');
  const limit = filter.limit ?? 50;
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= 1_000))
    throw new TypeError('Expected `limit` to be an integer from 1 to 1000.');
  const query: RunListQuery = {
    statuses,
    since: filter.since === undefined ? -Infinity : time(filter.since, 'since'),
    until: filter.until === undefined ? Infinity : time(filter.until, 'until'),
    limit,
  };
  if (filter.chain !== undefined) query.chain = filter.chain;
  if (filter.cursor !== undefined) query.after = decodeRunCursor(filter.cursor);
  return query;
}

/**
 * Adds what steers a run in flight to a stored run read back: its retry mark (epoch ms, absent when
 * null, undefined or empty) and a cancel request (`null`/`undefined`: none; a string: its reason, `''` for none given).
 *
 * @example
 * ```ts
 * const run = steered(storedRun(row.record, state, row.journal), row.retry_until, row.cancel_reason);
 * ```
 */
export function steered(run: StoredRun, retry: unknown, cancel: unknown): StoredRun {
  const until = retry === null || retry === undefined || retry === '' ? NaN : Number(retry);
  if (run.status === 'running' && Number.isFinite(until)) run.retryingUntil = until;
  if (run.status === 'running' && typeof cancel === 'string')
    run.cancelRequested = cancel === '' ? {} : { reason: cancel };
  return run;
}
