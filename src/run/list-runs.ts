// `runner.listRuns`: a page of the durable runs a run store holds, every user's (an operator's view) or
// one user's (`{ context }`, compared as `getRun`'s is), newest first.
import type { Chain } from '../define/chain.js';
import { maskText } from '../observe/redact.js';
import { callStore } from '../stores/guard.js';
import { encodeRunCursor, listQuery, type ListRunsFilter, type RunPage } from '../stores/run-list.js';
import type { RunStore } from '../stores/run-store.js';
import type { RedactRule } from '../util/redact.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { contextMatchesOf, shownTo } from './visibility.js';

/** What a listing reads: the run store, the chains the runner knows (their context schemas), its redaction. */
export interface Listing {
  store: RunStore;
  chains: ReadonlyMap<string, Chain>;
  redact: RedactRule | undefined;
  now: () => number;
}

/**
 * One page of runs for `filter`, with its cursor when more follow; an awaiting run's question masked.
 * Rejects with a `TypeError` for a malformed filter, a store without `listRuns`, or `{ context }` on a
 * store that does not list by context.
 *
 * @example
 * ```ts
 * const page = await listRuns({ store, chains, redact: undefined, now: Date.now }, { context: { userId } });
 * ```
 */
export async function listRuns(listing: Listing, filter: ListRunsFilter): Promise<RunPage> {
  const { store, now } = listing;
  if (!store.listRuns)
    throw new TypeError(
      'listRuns() needs a run store that lists runs: memoryRunStore(), redisStores(...) or postgresStores(...).',
    );
  const query = listQuery(filter);
  const context = shownTo(filter);
  if (context !== undefined) {
    if (!store.listsByContext)
      throw new TypeError(
        'listRuns({ context }) needs a run store that lists runs by context: memoryRunStore(), redisStores(...) ' +
          'or postgresStores(...).',
      );
    query.contexts = contextMatchesOf(listing.chains, context, query.chain);
    if (query.contexts.length === 0) return { runs: [] }; // a context that is nobody's
  }
  const found = await callStore(() => store.listRuns!(query), now() + STORE_WAIT_MS, now, 'run (list)');
  for (const run of found.runs)
    if (run.awaiting) run.awaiting.question = maskText(run.awaiting.question, listing.redact);
  const last = found.runs[found.runs.length - 1];
  return found.more && last ? { runs: found.runs, cursor: encodeRunCursor(last) } : { runs: found.runs };
}
