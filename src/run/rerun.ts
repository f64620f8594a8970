// `runner.rerun(runId)`: a failed durable run run again from its first failed step, as a new run
// linked to the old one by its id (`<old>~rerun1`, then `~rerun2` for a re-run of that…). The new run
// is recorded with the old run's input and context and a journal seeded with the old run's
// completed steps (those not undone by compensation); then it continues from that journal exactly as
// a recovered run does, so the steps before the failure are not called again.
import { callStore } from '../stores/guard.js';
import type { JournalEntry, StoredRun } from '../stores/run-store.js';
import type { RunResult } from '../observe/result.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { hashContext } from './checkpoint.js';
import type { ParkedRuns } from './decide.js';
import { newId } from './ids.js';
import { continuation } from './journal.js';
import { checkRunId, isValidRunId } from './run-id.js';

/** What `runner.rerun` hands back once the new run is recorded: its id, the old one's, and its result. */
export interface Rerun {
  /** The new run's id: `<runId>~rerun1` (a re-run of `x~rerun1` is `x~rerun2`). */
  runId: string;
  /** The failed run it re-runs. */
  rerunOf: string;
  /** The steps taken over from the failed run's journal (not called again). */
  reused: string[];
  /** The new run's result (the recorded one when this run was re-run already: exactly once). */
  result: Promise<RunResult>;
}

/**
 * Why `runner.rerun` did not start a run: no such run, a run that
 * did not fail, or a chain this runner lacks (or has changed).
 */
export type RerunRefusal = 'not_found' | 'not_failed' | 'unknown_chain';

/**
 * The id of the re-run of `runId`: `<runId>~rerun1`, or the next number for a re-run.
 *
 * @example
 * ```ts
 * rerunIdOf('order-7');         // 'order-7~rerun1'
 * rerunIdOf('order-7~rerun1');  // 'order-7~rerun2'
 * ```
 */
export function rerunIdOf(runId: string): string {
  const m = /^(.*)~rerun(\d{1,6})$/s.exec(runId);
  return m ? `${m[1]}~rerun${Number(m[2]) + 1}` : `${runId}~rerun1`;
}

/** The failed run's completed steps that still hold: journaled, and not undone by its compensation. */
function kept(run: StoredRun): JournalEntry[] {
  const undone = new Set<string>();
  for (const e of run.journal) if (e.compensation === 'undone') undone.add(e.step);
  // Marks (a plain write's start, a decision) are not steps: the new run records its own.
  return run.journal.filter(
    (e) => e.compensation === undefined && e.started === undefined && e.decision === undefined && !undone.has(e.step),
  );
}

/**
 * Re-runs a failed durable run from its first failed step (see {@link Rerun}).
 *
 * @example
 * ```ts
 * const r = await rerunRun({ parts, durable, store }, 'order-7');
 * if (typeof r !== 'string') console.log(r.runId, (await r.result).status);
 * ```
 */
export async function rerunRun(steer: ParkedRuns, runId: string): Promise<Rerun | RerunRefusal> {
  checkRunId(runId);
  const { parts, durable, store } = steer;
  const { now } = parts.calls;
  const bounded = <T>(what: string, fn: () => Promise<T>): Promise<T> =>
    Promise.resolve(callStore(fn, now() + STORE_WAIT_MS, now, `run (${what})`));
  const old = await bounded('get', () => store.get(runId));
  if (!old) return 'not_found';
  if (old.status !== 'failed') return 'not_failed';
  const chain = parts.chains.get(old.chain);
  if (!chain || chain.fingerprint !== old.fingerprint) return 'unknown_chain';
  const next = rerunIdOf(runId);
  if (!isValidRunId(next))
    throw new TypeError(`Run ${runId} cannot be re-run: the new run id would be longer than 255 characters.`);
  const entries = kept(old);
  const reused = entries.map((e) => e.step);
  const context = (old.context ?? {}) as Record<string, unknown>;
  const startedAt = now();
  // Recorded under a seeding owner with a lease long enough to write the journal; then its lease is
  // ended so that the runner (or any instance recovering runs) continues it from that journal.
  const seeder = `rerun:${newId()}`;
  const created = await bounded('create', () =>
    store.create(
      {
        v: 1,
        runId: next,
        traceId: newId(),
        chain: old.chain,
        fingerprint: old.fingerprint,
        ...(old.sessionId !== undefined && { sessionId: old.sessionId }),
        input: old.input,
        context,
        contextHash: hashContext(context),
        startedAt,
        deadlineAt: startedAt + chain.timeoutMs,
        status: 'running',
        owner: seeder,
        leaseUntil: startedAt + 60_000,
      },
      startedAt,
    ),
  );
  if (created.status === 'mismatch')
    throw new Error(`Run id ${next} (the re-run of ${runId}) is taken by another run.`);
  // One write: the re-run's journal is there whole or not at all.
  if (created.status === 'created' && entries.length > 0)
    await bounded('journal', () => store.journal(next, seeder, entries));
  // Taken over (another instance seeded it and ended that seed's lease, or a re-run's owner died): the
  // journal is there already. Either way the seed lets go at once, or nobody could run it until it lapsed.
  if (created.status === 'created' || created.status === 'taken')
    await bounded('renew', () => store.renew(seeder, [next], 0));
  // Created (now unowned), or re-run already: `durable.run` takes the seeded run over and continues
  // it, waits out a re-run in flight elsewhere ('run_in_progress'), or answers a finished one's result.
  const exec = continuation({ ...old, runId: next, journal: entries, startedAt }, chain);
  return { runId: next, rerunOf: runId, reused, result: durable.run({ ...exec, resumed: false }) };
}
