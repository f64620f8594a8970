// `runner.cancel(runId)` from any instance: a run parked at a gate, in doubt or waiting is ended
// through its own atomic take; a run in flight is asked to stop (recorded, then announced to its
// owner), and the answer says whether the cancel ended it.
import type { RunResult } from '../observe/result.js';
import type { ShownTo } from './visibility.js';
import { callStore } from '../stores/guard.js';
import type { RunEventLog } from '../stores/run-event-log.js';
import type { RunStore, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { cancelParked, type ParkedRuns } from './decide.js';
import type { Durable } from './durable.js';
import { cancelAnnounce } from './events-log.js';
import { checkRunId } from './run-id.js';

/** How long `cancel()` waits for the run to end. */
const CANCEL_WAIT_MS = 3_000;

/** What a cancel needs of the runner. */
export interface Canceller {
  store: RunStore;
  log: RunEventLog;
  durable: Durable | undefined;
  /** The runner's steering of parked runs (throws without a durable side: only called with one). */
  parked: () => ParkedRuns;
  now: () => number;
}

/** Statuses a run waits in without an owner; `runner.cancel` ends each its own way. */
const PARKED: ReadonlySet<string> = new Set(['awaiting_confirmation', 'in_doubt', 'waiting']);

/**
 * Whether a run ended because it was cancelled (`failed`, `run_cancelled`), not otherwise.
 *
 * @example
 * ```ts
 * return cancelledEnd(run) ? 'cancelled' : 'ended';
 * ```
 */
function cancelledEnd(run: StoredRun): boolean {
  const result = run.result as RunResult | undefined;
  return result?.status === 'failed' && result.error.code === 'run_cancelled';
}

/**
 * Cancels `runId` (see `Runner.cancel`): `'cancelled'` when the cancel ended the run or is recorded on a
 * run still in flight, `'ended'` when the run had ended or ended otherwise first, `'not_found'`.
 *
 * @example
 * ```ts
 * await cancelRun({ store, log, durable, parked, now }, runId, { reason: 'the user left' }); // 'cancelled'
 * ```
 */
export async function cancelRun(
  c: Canceller,
  runId: string,
  cancelOptions: { reason?: string },
  shown?: ShownTo,
): Promise<'cancelled' | 'not_found' | 'ended'> {
  const { store, log, durable, parked, now } = c;
  checkRunId(runId); // before any store is asked
  const read = () => callStore(() => store.get(runId), now() + STORE_WAIT_MS, now, 'run (get)');
  let run = await read();
  if (!run || (shown && !shown(run))) return 'not_found'; // another user's run: as if unknown, untouched
  if (run.status === 'awaiting_confirmation' && durable) {
    const took = await cancelParked(parked(), run, cancelOptions.reason);
    if (took === true) return 'cancelled';
    run = await read(); // a resume or a decision took the checkpoint first: cancel the run it continued
    if (!run) return 'not_found';
    // Its token refused as expired (by this runner's clock): that is why, not a missing chain.
    if (run.status === 'awaiting_confirmation' && took === 'expired')
      throw new Error(
        `Run ${runId} is parked at a confirmation that has expired (by this runner's clock): ` +
          'it can no longer be resumed or cancelled from here.',
      );
    // Refused before the take (no such chain here, or another definition): the run and its token are untouched.
    if (run.status === 'awaiting_confirmation')
      throw new Error(
        `Run ${runId} is parked at a gate, and this runner cannot continue it to undo its steps: ` +
          `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
      );
  }
  // A run in doubt (its write not called again) or waiting (§12, taken as a signal would take it): it ends
  // cancelled, its completed steps undone. A decision, signal or wake-up that took it first: cancel the run it
  // went on as (parked again, or running).
  if ((run.status === 'in_doubt' || run.status === 'waiting') && durable) {
    const took =
      run.status === 'in_doubt'
        ? typeof (await durable.settleDoubt(run, { retry: false, by: 'cancel' }, cancelOptions.reason ?? '')) !==
          'string'
        : await durable.cancelWaiting(run, cancelOptions.reason);
    if (took) return 'cancelled';
    run = await read();
    if (!run) return 'not_found';
    if (PARKED.has(run.status)) return cancelRun(c, runId, cancelOptions);
  }
  if (run.status !== 'running') return 'ended';
  // Recorded first: an owner that died (or dies before it hears the announce) leaves the run to
  // whoever takes it over, and that runner ends it cancelled instead of continuing it.
  if (store.requestCancel)
    await callStore(
      () => store.requestCancel!(runId, cancelOptions.reason),
      now() + STORE_WAIT_MS,
      now,
      'run (cancel)',
    );
  // Its owner's lease has expired: nobody is there to hear the announce; this runner ends it itself.
  if (durable && run.leaseUntil < now() && (await durable.cancelExpired(run, cancelOptions.reason))) return 'cancelled';
  const until = now() + CANCEL_WAIT_MS;
  for (let round = 0; now() < until; round++) {
    // Announced again now and then: the owner may not have been listening yet.
    if (round % 5 === 0) await log.announce(cancelAnnounce(runId, cancelOptions.reason)).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 50));
    const current = await read();
    if (!current) return 'ended'; // past its retention already
    // It parked before its owner heard the cancel: cancelled as a parked run is.
    if (PARKED.has(current.status)) return cancelRun(c, runId, cancelOptions);
    // It ended: cancelled only if the cancel ended it (its owner may have finished first).
    if (current.status !== 'running') return cancelledEnd(current) ? 'cancelled' : 'ended';
    // Its owner is gone: ended cancelled here, or (no chain here to undo its steps) by whoever recovers it next.
    if (durable && current.leaseUntil < now()) {
      await durable.cancelExpired(current, cancelOptions.reason);
      break;
    }
  }
  // Still running: the cancel is recorded, and its owner (or its next one) ends the run cancelled.
  const last = await read();
  if (last && PARKED.has(last.status)) return cancelRun(c, runId, cancelOptions);
  return last && (last.status === 'running' || cancelledEnd(last)) ? 'cancelled' : 'ended';
}
