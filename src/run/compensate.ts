// Compensation: when a later step fails, undo the completed steps that declare `compensate`, newest
// first. It belongs to the run (it acts on what the run did), not to the policies around one call.
import type { Scope } from '../define/ref.js';
import { parseSchema } from '../define/schema.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { RunAbortReason, ToolFailure } from '../errors/failure.js';
import { toErrorInfo } from '../errors/messages.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { AbortScope } from '../policies/abort.js';
import { UNDONE } from '../policies/idempotency.js';
import { callStore } from '../stores/guard.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import type { CallContext } from '../policies/types.js';
import { callContext, failureInfo, UNDO_FLOOR_MS, type Calls, type CallSite } from './call-context.js';
import { describeThrown, iso, type UndoJournal } from './execution.js';
import { schemaFailure } from './pipeline.js';
import type { Recorder } from './recorder.js';
import { traceEntry } from './trace-entry.js';

/** The run a compensation belongs to: its ids, its context and its scope (what undo inputs read). */
export interface CompensationRun extends Omit<CallSite, 'abort' | 'deadline'> {
  readonly scope: Scope;
  /** Epoch ms the run first started: the trace's total latency counts from it. */
  readonly startedAt: number;
}

type FailedRun = Extract<RunResult, { status: 'failed' }>;

/**
 * A completed step to undo: the step, its id as the run names it (`save`, or `done/3/save` inside
 * the item 3 of the forEach step `done`) and the scope its undo's input is built from (a sub-chain's own).
 */
export interface UndoUnit {
  readonly step: PlannedStep;
  readonly id: string;
  readonly scope: Scope;
  /**
   * The idempotency store key the write was kept under, when it completed in this segment (one
   * completed before a crash is known from the run's journal, which recovery reads instead).
   */
  readonly writeKey?: string | undefined;
}

/**
 * After a failure: undoes `steps` (pass them newest first) and writes what happened into the failed
 * result — `compensated`, `compensationFailures` and the undos' trace entries. A runner being closed
 * undoes nothing: each step is reported as not compensated. With `journal`, each undo is recorded
 * (see {@link UndoJournal}); a `false` from it stops before the next undo.
 *
 * @example
 * ```ts
 * await compensateRun(calls, recorder, run, todo, result);
 * ```
 */
export async function compensateRun(
  calls: Calls,
  recorder: Recorder,
  run: CompensationRun,
  steps: readonly UndoUnit[],
  result: FailedRun,
  closedBy: unknown,
  journal?: UndoJournal,
): Promise<void> {
  if (steps.length === 0) return;
  if (closedBy instanceof RunAbortReason && closedBy.kind === 'closed') {
    result.compensationFailures = steps.map(({ step, id }) => ({
      step: id,
      error: toErrorInfo(
        { category: 'cancelled', code: 'runner_closed', message: 'Not compensated: the runner was closed.' },
        { step: id, tool: step.compensate!.tool.name },
      ),
    }));
    return;
  }
  const { trace } = result;
  const failures: { step: string; error: ChainErrorInfo }[] = result.compensationFailures
    ? [...result.compensationFailures]
    : [];
  if (!journal || (await journal.start(result.error))) {
    for (const unit of steps) {
      const { entry, error } = await undo(calls, recorder, run, unit);
      if (error) failures.push({ step: unit.id, error });
      else result.compensated.push(unit.id);
      trace.steps.push(entry);
      if (journal && !(await journal.undone(unit.id, entry, error))) break;
      // After the journal: a run recovered before this still finds its write done, and undoes it once.
      if (!error && unit.writeKey !== undefined) await markUndone(calls, recorder, run, unit, unit.writeKey);
    }
  }
  if (failures.length > 0) result.compensationFailures = failures;
  const ended = calls.now();
  trace.endedAt = iso(ended);
  trace.totalLatencyMs = ended - run.startedAt;
}

/**
 * After an undo: the write's key keeps {@link UNDONE} in place of its result, so a request retried
 * with the same run id (or a call with the same key) is refused rather than answered that the write is
 * done: its effect is gone. Not deleted: a duplicate in flight still finds its undo's own key done,
 * and undoes nothing twice. A store that fails or falls silent here is logged; the undo stands.
 */
async function markUndone(
  calls: Calls,
  recorder: Recorder,
  run: CompensationRun,
  unit: UndoUnit,
  writeKey: string,
): Promise<void> {
  const tool = unit.step.tool!;
  try {
    await callStore(
      () => calls.idempotency.complete(writeKey, UNDONE, tool.idempotencyTtlMs),
      calls.now() + STORE_WAIT_MS,
      calls.now,
      'idempotency',
    );
  } catch (thrown) {
    recorder.logger?.warn(
      { runId: run.runId, traceId: run.traceId, chain: run.chain, step: unit.id, tool: tool.name },
      `step ${unit.id} was undone, but its idempotency key could not be marked so: ${describeThrown(thrown)}`,
    );
  }
}

/**
 * Undoes one step through the same pipeline as a step, with a deadline of its own — the run's may
 * have passed, and an undo must still be attempted. A failed undo is reported, never hidden.
 */
async function undo(
  calls: Calls,
  recorder: Recorder,
  run: CompensationRun,
  { step, id, scope }: UndoUnit,
): Promise<{ entry: TraceStep; error: ChainErrorInfo | undefined }> {
  const { tool, resolveInput } = step.compensate!;
  const started = calls.now();
  const abort = new AbortScope();
  const site: CallSite = {
    runId: run.runId,
    traceId: run.traceId,
    sessionId: run.sessionId,
    chain: run.chain,
    context: run.context,
    abort,
    deadline: { floorMs: UNDO_FLOOR_MS, from: started },
    durable: run.durable,
  };
  calls.active.add(abort);
  let ctx: CallContext | undefined;
  let error: ChainErrorInfo | undefined;
  try {
    const parsed = parseSchema(tool.input, resolveInput(scope));
    if (!parsed.success)
      throw new ToolFailure(
        schemaFailure(
          'invalid_step_input',
          `Compensation input for tool ${tool.name} (step ${id}) does not match its schema`,
          parsed.error.issues,
        ),
      );
    ctx = callContext(calls, site, id, tool, parsed.data, `${run.runId}:${id}:compensate`);
    await calls.call(ctx);
  } catch (thrown) {
    // Before the trace, the event and the log line see it: secrets leave in no text (docs/ARCHITECTURE.md, Secrets).
    error = maskError(
      failureInfo(calls, thrown, { step: id, tool: tool.name, attempts: ctx?.attempt ?? 0 }, ctx, false),
      secretMask(calls.redact, ctx?.input, scope.input, run.context),
    );
    recorder.logger?.error(
      { runId: run.runId, traceId: run.traceId, chain: run.chain, step: id, tool: tool.name, code: error.code },
      `compensation of step ${id} failed: ${error.message}`,
    );
  } finally {
    calls.active.delete(abort);
  }
  const entry = traceEntry(
    step.index + 1,
    id,
    tool.name,
    error ? 'error' : 'compensated',
    ctx?.attempt ?? 0,
    started,
    calls.now(),
  );
  if (error) entry.error = error;
  recorder.stepEnded(site, entry);
  return { entry, error };
}
