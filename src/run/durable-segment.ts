// One segment of a durable run this runner owns (from its start, a resume, a take-over, a wake-up or a
// decision to its end or its next parking): each step and undo journaled, the end recorded.
import { CheckpointEncodeError } from '../stores/serialize.js';
import { AbortScope } from '../policies/abort.js';
import type { RunResult } from '../observe/result.js';
import { settleTrace, type TraceStep } from '../observe/trace.js';
import { checkRunValue, encodeRunValue } from '../stores/run-codec.js';
import type { JournalEntry } from '../stores/run-store.js';
import { UNDO_FLOOR_MS } from './call-context.js';
import { earlyFailure } from './early-result.js';
import { runEndData } from './events-log.js';
import type { RunEndData } from '../observe/run-events.js';
import type { Execution } from './execution.js';
import { execute } from './executor.js';
import { journalPlan } from './journal.js';
import type { Lease } from './lease.js';
import type { DurableOwner } from './durable-owner.js';

/** A segment continuing a write in doubt that a decision retries: which steps, and who decided. */
export interface RetriedWrites {
  steps: ReadonlySet<string>;
  by: string;
}

/**
 * Runs `exec` as a durable run `o` owns until `deadlineAt`, its lease held until `leaseUntil`:
 * journals each step and each undo, records the end (or parks it), announces it.
 *
 * @example
 * ```ts
 * const result = await ownSegment(o, exec, exec.startedAt + exec.chain.timeoutMs, false, o.now() + o.leaseMs);
 * ```
 */
export function ownSegment(
  o: DurableOwner,
  exec: Execution,
  deadlineAt: number,
  recovered: boolean,
  leaseUntil: number,
  retried?: RetriedWrites,
): Promise<RunResult> {
  const { runId } = exec;
  const { store, owner, parts, now } = o;
  const plan = journalPlan(exec.chain);
  const atEnd: JournalEntry[] = [];
  // Completed steps waiting to ride on the next journal write (JournalPlan.defer), and the write carrying them.
  const deferred: JournalEntry[] = [];
  let carrying: Promise<void> | undefined;
  const lease = o.leases.hold(runId, leaseUntil);
  // A lease found lost while a tool runs (by the renewal timer) stops the run at once, retries included;
  // so does a cancel from any instance (announced through the run's event log). One scope for both (a
  // cancel aborts the run's event writer's), linked to the run beside the caller's signal: no
  // AbortController, combined signal or EventTarget listener per durable run.
  const events = parts.recorder.runEvents;
  exec.stop = lease.stop = events ? events.open(runId).stopper : new AbortScope();
  exec.deadlineAt = deadlineAt;
  exec.durable = { runId, owner, takeOver: true };
  exec.interrupted = () => lease.lost || lease.failed !== undefined;
  if (store.parkWaiting) exec.parks = true;
  exec.journal = (entry: JournalEntry) => {
    // A write retried by a decision: who decided shows on its trace entry (journaled, and in the result's trace).
    if (retried?.steps.has(entry.step) && entry.trace) entry.trace.decidedBy = retried.by;
    if (plan.skip.has(entry.step)) return true;
    if (plan.atEnd.has(entry.step) || plan.defer.has(entry.step)) {
      // A value no store keeps fails its step now, not the later write; encoded only at that write:
      // masking a failed run's trace may change the entry in between.
      checkRunValue(entry);
      return void (plan.atEnd.has(entry.step) ? atEnd : deferred).push(entry);
    }
    return write(entry).then((kept) => {
      if (!kept) throw lease.failed ?? o.leaseLost(runId);
    });
  };
  /** Journals `entry` with the steps deferred so far (JournalPlan.defer); `false` as {@link journalOnce}. */
  const write = async (entry: JournalEntry): Promise<boolean> => {
    // A write after one carrying deferred steps waits for it: they are journaled before anything after them.
    // A loop: another waiter woken by the same write may have started a new carrying write first.
    while (carrying !== undefined) await carrying;
    if (lease.lost || lease.failed) return false;
    if (deferred.length === 0) return journalOnce([entry]);
    const carried = deferred.splice(0);
    const done = journalOnce([...carried, entry]).catch((error: unknown) => {
      deferred.unshift(...carried); // nothing written (a value the codec refuses): a later write or the end takes them
      throw error;
    });
    const mark = (carrying = done.then(
      () => undefined,
      () => undefined,
    ));
    void mark.then(() => {
      if (carrying === mark) carrying = undefined;
    });
    return done;
  };
  /** Journals `entries` in one write; `false` when the lease is lost or the store failed (the run is interrupted). */
  const journalOnce = async (entries: JournalEntry[]): Promise<boolean> => {
    try {
      const until = Math.max(deadlineAt, now() + UNDO_FLOOR_MS);
      if (await o.bounded('journal', until, () => store.journal(runId, owner, entries))) return true;
      o.leases.lose(lease);
    } catch (error) {
      // A value the codec refuses fails its step (the run then ends as any failed run); anything else is the store's.
      if (error instanceof CheckpointEncodeError) throw error;
      lease.failed = error;
    }
    return false;
  };
  // A plain write is journaled as started before it is called:
  // whoever finds it with no outcome parks the run in doubt.
  exec.beforeWrite = async (ctx) => {
    const started: JournalEntry = {
      step: ctx.step!,
      started: {
        tool: ctx.tool.name,
        input: parts.recorder.redacted(ctx.input),
        at: now(),
        ...(retried?.steps.has(ctx.step!) && { decidedBy: retried.by }),
      },
    };
    try {
      encodeRunValue(started); // made, not only checked: any refusal (a text too long to make, too) drops the input
    } catch {
      delete started.started!.input; // an input the journal cannot encode is not shown, the start still recorded
    }
    if (!(await write(started))) throw lease.failed ?? o.leaseLost(runId);
  };
  let compensating = exec.compensating !== undefined;
  exec.undoJournal = {
    start: (error, reported) => {
      if (compensating) return true;
      compensating = true;
      const start: JournalEntry = { step: '', compensation: 'start', error, trace: COMPENSATION_TRACE };
      if (reported) start.undone = reported;
      return write(start).catch(() => false);
    },
    undone: (step, trace, error) =>
      write({ step, compensation: error ? 'undo_failed' : 'undone', ...(error && { error }), trace }).catch(
        () => false,
      ),
  };
  exec.onEnd = async (result: RunResult) => {
    o.leases.release(runId);
    if (deferred.length > 0) atEnd.unshift(...deferred.splice(0)); // steps no write carried: with the end
    // A run cut off by close(), a failed store or a lost lease has not ended: its next owner ends it.
    if (result.status === 'failed' && result.error.code === 'runner_closed')
      return events?.close(runId, undefined, undefined, now()); // not ended: nothing to wait for
    if (lease.lost || lease.failed) {
      await events?.close(runId, undefined, undefined, now());
      return interruptedResult(o, result, lease);
    }
    let recorded = false;
    const until = Math.max(deadlineAt, now() + UNDO_FLOOR_MS); // the end write keeps the run's deadline
    const keepMs = o.keepFor(result.status);
    const end = (): RunEndData => runEndData(result, (v) => parts.recorder.redacted(v));
    // The last events ride on the end's write where the store can: one round trip less per run.
    const last =
      events && store.finishWithEvents && result.status !== 'waiting'
        ? events.takeEnd(runId, end(), keepMs)
        : undefined;
    let unsent = last?.events; // taken, and not known to be written with the end
    let threw = false; // the write failed, rather than answering that this runner no longer owns the run
    try {
      recorded = await o.bounded('finish', until, () =>
        result.status === 'waiting'
          ? park(o, runId, result, atEnd)
          : last
            ? store.finishWithEvents!(runId, owner, result.status, result, keepMs, atEnd, last)
            : store.finish(runId, owner, result.status, result, keepMs, atEnd),
      );
      if (recorded) unsent = undefined;
    } catch (error) {
      threw = true;
      if (error instanceof CheckpointEncodeError) recorded = await finishPlain(o, runId, result, until, atEnd);
      else {
        o.warn(error, `could not record the end of run ${runId}`);
        unsent = undefined; // the write may have happened after all: its events are not sent twice
      }
    }
    // Steps journaled with the end, and a compensation, are done only once the end is recorded:
    // otherwise the run stays in flight (its next owner finishes it from the journal) and this caller is told so.
    if (last === undefined)
      await events?.close(runId, recorded ? end() : undefined, recorded ? keepMs : undefined, until);
    else if (unsent !== undefined)
      await events!.append(runId, recorded ? unsent : unsent.slice(0, -1), recorded ? keepMs : undefined, until);
    // A park not recorded has not parked: the caller is not told `waiting` for a run the store says runs.
    if (!recorded && (atEnd.length > 0 || compensating || result.status === 'waiting'))
      return unrecorded(o, result, !threw);
    parts.recorder.durableRunEnded(result, recovered);
  };
  return execute(o.fencedParts, exec);
}

/**
 * Parks a run `waiting` (API.md §12): no owner, no lease, a wake-up at a sleep's end or a waitFor's
 * timeout. A sleep is journaled done in the same write: the run goes on after it once woken.
 */
function park(
  o: DurableOwner,
  runId: string,
  result: Extract<RunResult, { status: 'waiting' }>,
  atEnd: readonly JournalEntry[],
): Promise<boolean> {
  const { step, until, signal } = result.waiting;
  const entries = [...atEnd];
  if (signal === undefined) {
    const trace = traceOf(result.trace.steps, step);
    entries.push({ step, value: null, ...(trace && { trace: { ...trace, status: 'success' as const } }) });
  }
  return o.store.parkWaiting!(runId, o.owner, result, until ?? null, entries);
}

/** The end of a run whose result the codec refused (a value in its trace or `completed`): recorded without them. */
async function finishPlain(
  o: DurableOwner,
  runId: string,
  result: RunResult,
  until: number,
  atEnd: readonly JournalEntry[],
): Promise<boolean> {
  const plain = {
    ...result,
    trace: { ...result.trace, steps: plainSteps(result.trace.steps) },
    ...('completed' in result && { completed: {} }),
    ...('output' in result && { output: undefined }),
  };
  try {
    return await o.bounded('finish', until, () =>
      o.store.finish(runId, o.owner, result.status, plain, o.keepFor(result.status), atEnd),
    );
  } catch (error) {
    o.warn(error, `could not record the end of run ${runId}`);
    return false;
  }
}

/** Trace steps without the values they carry, at every depth (the steps of sub-chains and items too). */
function plainSteps(steps: readonly TraceStep[]): TraceStep[] {
  return steps.map(({ input: _i, output: _o, ...step }) =>
    step.children === undefined ? step : { ...step, children: plainSteps(step.children) },
  );
}

/** A run cut off by a lost lease or a failed store: the caller learns that, not a failure that was never recorded. */
function interruptedResult(o: DurableOwner, result: RunResult, lease: Lease): RunResult {
  const body =
    lease.failed !== undefined
      ? earlyFailure(
          o.calls,
          'unavailable',
          'store_unavailable',
          lease.failed instanceof Error ? lease.failed.message : String(lease.failed),
        )
      : earlyFailure(o.calls, 'conflict', 'lease_lost', o.leaseLost(result.runId).message);
  // The step whose record failed (or that found the lease lost): the caller learns where it stopped.
  if (result.status === 'failed' && result.error.step !== undefined) body.error.step = result.error.step;
  settleTrace(result.trace, 'failed', body.error);
  return {
    ...body,
    completed: 'completed' in result ? result.completed : {},
    runId: result.runId,
    chain: result.chain,
    trace: result.trace,
    metadata: result.metadata,
  };
}

/**
 * A run whose end or park the store did not record: `lease_lost` when the store answered that this
 * runner no longer owns it, else `store_unavailable` (a runner will go on from its journal).
 */
function unrecorded(o: DurableOwner, result: RunResult, refused: boolean): RunResult {
  const body = refused
    ? earlyFailure(o.calls, 'conflict', 'lease_lost', o.leaseLost(result.runId).message)
    : unrecordedFailure(o, result);
  settleTrace(result.trace, 'failed', body.error);
  return { ...body, runId: result.runId, chain: result.chain, trace: result.trace, metadata: result.metadata };
}

/** The store failed at a run's end or park: `store_unavailable`, and its next owner goes on from the journal. */
function unrecordedFailure(o: DurableOwner, result: RunResult) {
  return earlyFailure(
    o.calls,
    'unavailable',
    'store_unavailable',
    result.status === 'waiting'
      ? `Run ${result.runId} reached step ${result.waiting.step}, but the run store did not record it waiting there; ` +
          'a runner will continue it from its journal.'
      : `Run ${result.runId} ran to its end, but the run store did not record it; ` +
          'a runner will finish it from its journal.',
  );
}

/** The trace entry of a compensation's start (it names no step). */
const COMPENSATION_TRACE: TraceStep = Object.freeze({
  stepNumber: 0,
  id: '',
  status: 'error',
  attempts: 0,
  latencyMs: 0,
  startedAt: new Date(0).toISOString(),
}) as TraceStep;

/** The trace entry of step `id` (`nap`, or inside sub-chains `done/3/nap`), among `steps` and their children. */
function traceOf(steps: readonly TraceStep[], id: string): TraceStep | undefined {
  for (const t of steps) {
    if (t.id === id) return t;
    if (t.children && id.startsWith(`${t.id}/`)) {
      const found = traceOf(t.children, id);
      if (found) return found;
    }
  }
  return undefined;
}
