// Recovery: runs whose owner died are claimed (or taken over) and continued from their journal; runs
// nobody here can continue end past their deadline; waiting runs whose time came are woken.
import type { Chain } from '../define/chain.js';
import { RunAbortReason } from '../errors/failure.js';
import type { RunResult } from '../observe/result.js';
import type { ClaimFilter, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { parkInDoubt } from './durable-doubt.js';
import { priorTraceOf, type DurableOwner } from './durable-owner.js';
import { ownSegment } from './durable-segment.js';
import { wake } from './durable-waiting.js';
import { earlyFailure, earlyResult } from './early-result.js';
import { continuation, writesInDoubt } from './journal.js';

/** Runs claimed per `recover()` call. */
const DEFAULT_RECOVER_LIMIT = 100;
/** How long past its deadline a run no runner here can continue waits for one that can, before any ends it. */
const ORPHAN_GRACE_MS = 60_000;

/**
 * Continues a stored run this runner now owns (taken over or claimed) from its journal: parked in
 * doubt if a plain write has no outcome, ended if this runner lacks its definition.
 *
 * @example
 * ```ts
 * const result = await resumeStored(o, created.run, created.run.previousOwner ?? '', leaseUntil, exec.chain);
 * ```
 */
export function resumeStored(
  o: DurableOwner,
  run: StoredRun,
  previousOwner: string,
  leaseUntil: number,
  given?: Chain,
): Promise<RunResult> {
  const chain = given ?? o.parts.chains.get(run.chain);
  if (!chain || chain.fingerprint !== run.fingerprint) return endOrphan(o, run, chain);
  const doubt = writesInDoubt(run);
  if (doubt.length > 0) return parkInDoubt(o, run, chain, doubt, previousOwner);
  o.parts.recorder.runRecovered(run, previousOwner, o.owner);
  const exec = continuation(run, chain);
  if (run.cancelRequested) {
    // Cancelled while its owner was gone: no step starts, what it completed is compensated.
    const stop = new AbortController();
    stop.abort(
      new RunAbortReason(
        'cancelled',
        `The run was cancelled${run.cancelRequested.reason ? `: ${run.cancelRequested.reason}` : ''}.`,
        'run_cancelled',
      ),
    );
    exec.signal = stop.signal;
  }
  return ownSegment(o, exec, run.deadlineAt, true, leaseUntil);
}

/**
 * Claims expired runs this runner can continue and starts them, and wakes its waiting runs
 * whose time came; resolves with their results' promises (`undefined`: taken by another first).
 *
 * @example
 * ```ts
 * const results = await Promise.all(await claimAndStart(o));
 * ```
 */
export async function claimAndStart(o: DurableOwner): Promise<Promise<RunResult | undefined>[]> {
  const { store, owner } = o;
  const limit = o.options.recover?.limit ?? DEFAULT_RECOVER_LIMIT;
  const t = o.now();
  const until = t + o.leaseMs;
  const claimed = await o.bounded('claim', t + STORE_WAIT_MS, () =>
    store.claimExpired(owner, t, until, limit, claimFilter(o, t)),
  );
  if (claimed.length === 0)
    o.parts.logger?.debug(
      { owner },
      'durable runs: recover() found no expired run of a chain (and fingerprint) this runner has',
    );
  for (const run of claimed) o.leases.hold(run.runId, until);
  const started: Promise<RunResult | undefined>[] = claimed.map((run) =>
    resumeStored(o, run, run.previousOwner ?? '', until),
  );
  if (store.dueWaiting && store.takeParked) {
    const due = await o.bounded('due', t + STORE_WAIT_MS, () => store.dueWaiting!(t, limit, claimFilter(o, t)));
    for (const runId of due) started.push(wake(o, runId));
  }
  return started;
}

/**
 * Cancels a run in flight whose owner's lease expired (its owner died): takes it over, undoes its
 * completed steps and ends it `failed`/`run_cancelled`. `undefined` when this runner cannot (no such
 * chain or another definition here, or another runner took it first).
 *
 * @example
 * ```ts
 * const ended = await cancelExpired(o, run, 'stuck');
 * ```
 */
export async function cancelExpired(
  o: DurableOwner,
  run: StoredRun,
  reason: string | undefined,
): Promise<RunResult | undefined> {
  const chain = o.chainOf(run);
  if (o.closed || !chain) return undefined;
  const t = o.now();
  const leaseUntil = t + o.leaseMs;
  const {
    journal: _journal,
    retryingUntil: _retrying,
    cancelRequested: _cancel,
    result: _result,
    previousOwner: _previous,
    ...record
  } = run;
  // The same atomic take-over as a caller retrying the run id: one runner wins, the others see it busy.
  const created = await o.bounded('create', t + STORE_WAIT_MS, () =>
    o.store.create({ ...record, owner: o.owner, leaseUntil }, t),
  );
  if (created.status !== 'taken') return undefined;
  return resumeStored(
    o,
    { ...created.run, cancelRequested: reason === undefined ? {} : { reason } },
    created.run.previousOwner ?? run.owner, // who held it when this runner took it over
    leaseUntil,
    chain,
  );
}

/** The chains this runner can continue: what a claim is filtered by. */
function claimFilter(o: DurableOwner, t: number): ClaimFilter {
  return {
    chains: [...o.parts.chains.values()].map((c) => ({ name: c.name, fingerprint: c.fingerprint })),
    // Runs nobody here can continue are ended once their deadline is
    // well past (their own runners had a lease's worth of polls first).
    orphanedBefore: t - Math.max(ORPHAN_GRACE_MS, 2 * o.leaseMs),
  };
}

/**
 * A run claimed without its definition here: past its deadline (the claim allows nothing else), it
 * ends `deadline_exceeded`; nothing can be undone without the definition, and the result says so.
 */
function endOrphan(o: DurableOwner, run: StoredRun, chain: Chain | undefined): Promise<RunResult> {
  const why = chain ? `chain ${run.chain} has changed here` : `this runner has no chain named '${run.chain}'`;
  const result = earlyResult(
    o.parts,
    {
      chain: run.chain,
      runId: run.runId,
      traceId: run.traceId,
      sessionId: run.sessionId,
      startedAt: run.startedAt,
      priorTrace: priorTraceOf(run),
    },
    earlyFailure(
      o.calls,
      'timeout',
      'deadline_exceeded',
      `Run ${run.runId} passed its deadline with no runner able to continue it; ` +
        `${why}, so its completed steps could not be compensated.`,
    ),
  );
  return o
    .bounded('finish', o.now() + STORE_WAIT_MS, () =>
      o.store.finish(run.runId, o.owner, 'failed', result, o.keepFor('failed')),
    )
    .then(
      () => result,
      (error: unknown) => {
        o.warn(error, `could not record the end of run ${run.runId}`);
        return result;
      },
    )
    .finally(() => o.leases.release(run.runId));
}
