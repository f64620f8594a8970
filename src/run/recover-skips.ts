// Why `recover()` left runs alone: a debug line per run in flight it did not take, with the reason.
import type { Chain } from '../define/chain.js';
import type { Logger } from '../observe/logger.js';
import { callStore } from '../stores/guard.js';
import type { RunStore, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';

/** Runs in flight looked at per explanation: the newest ones, one listing page. */
const EXPLAINED_RUNS = 20;

/** Why a run in flight was not recovered here, or `undefined` when it was (or is no longer in flight). */
function skipReason(
  run: StoredRun,
  chains: ReadonlyMap<string, Chain>,
  now: number,
): { reason: 'unknown_chain' | 'chain_changed' | 'lease_live' | 'not_claimed'; message: string } | undefined {
  if (run.status !== 'running') return undefined;
  const chain = chains.get(run.chain);
  if (!chain)
    return {
      reason: 'unknown_chain',
      message: `this runner has no chain named '${run.chain}' (give it in createRunner({ chains }))`,
    };
  if (chain.fingerprint !== run.fingerprint)
    return {
      reason: 'chain_changed',
      message:
        `it was started with another definition of chain ${run.chain} ` +
        `(fingerprint ${run.fingerprint}, here ${chain.fingerprint}); an instance with that definition recovers it`,
    };
  if (run.leaseUntil > now)
    return {
      reason: 'lease_live',
      message: `its owner ${run.owner} holds its lease for ${run.leaseUntil - now} ms more`,
    };
  return {
    reason: 'not_claimed',
    message: "another instance claimed it first, or it was past this call's `recover.limit`",
  };
}

/**
 * Logs at debug level, for each of the newest runs in flight that `recover()` did not take, why:
 * not this runner's chain, another definition of it, its owner's lease still live, or claimed
 * elsewhere. Reads the store only when there is a logger; never throws.
 *
 * @example
 * ```ts
 * const results = await durable.recover();
 * await logSkippedRuns(logger, store, parts.chains, new Set(results.map((r) => r.runId)), now);
 * ```
 */
export async function logSkippedRuns(
  logger: Logger | undefined,
  store: RunStore,
  chains: ReadonlyMap<string, Chain>,
  recovered: ReadonlySet<string>,
  now: () => number,
): Promise<void> {
  if (!logger || !store.listRuns) return;
  try {
    const until = now() + STORE_WAIT_MS;
    const page = await callStore(
      () => store.listRuns!({ statuses: ['running'], since: -Infinity, until: Infinity, limit: EXPLAINED_RUNS }),
      until,
      now,
      'run (list)',
    );
    const runs = await Promise.all(
      page.runs
        .filter((r) => !recovered.has(r.runId))
        .map((r) => callStore(() => store.get(r.runId), until, now, 'run (get)')),
    );
    const t = now();
    for (const run of runs) {
      const skipped = run && skipReason(run, chains, t);
      if (skipped)
        logger.debug(
          { runId: run.runId, chain: run.chain, reason: skipped.reason },
          `durable runs: recover() skipped run ${run.runId} (chain ${run.chain}): ${skipped.message}`,
        );
    }
  } catch (error) {
    logger.debug(
      { error: error instanceof Error ? error.message : String(error) },
      'durable runs: recover() could not list the runs it skipped',
    );
  }
}
