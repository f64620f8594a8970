// Compensation: when a later step fails, undo the completed steps that declare `compensate`, newest
// first. It belongs to the run (it acts on what the run did), not to the policies around one call.
import type { Scope } from '../define/ref.js';
import { parseSchema } from '../define/schema.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { ToolStep } from '../define/spec.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { RunAbortReason, ToolFailure } from '../errors/failure.js';
import { toErrorInfo } from '../errors/messages.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { AbortScope } from '../policies/abort.js';
import { keptByJournal } from '../policies/undone.js';
import type { CallContext, UndoneWrite } from '../policies/types.js';
import { callContext, failureInfo, UNDO_FLOOR_MS, type Calls, type CallSite } from './call-context.js';
import { iso, type UndoJournal } from './execution.js';
import { schemaFailure } from './pipeline.js';
import type { Recorder } from './recorder.js';
import { traceEnd, traceEntry } from './trace-entry.js';

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
  /** The generation of the key its write ran under (see CallContext.generation); absent: the first. */
  readonly generation?: number | undefined;
  /** Its write's trace entry: when the step ended, its result was kept, or read, by then (read only to undo). */
  readonly ran?: TraceStep | undefined;
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
    // After what a failed sub-chain reported (its own undos, or its own steps not compensated).
    const notUndone = steps.map(({ step, id }) => ({
      step: id,
      error: toErrorInfo(
        { category: 'cancelled', code: 'runner_closed', message: 'Not compensated: the runner was closed.' },
        { step: id, tool: step.compensate!.tool.name },
      ),
    }));
    result.compensationFailures = [...(result.compensationFailures ?? []), ...notUndone];
    return;
  }
  const { trace } = result;
  const failures: { step: string; error: ChainErrorInfo }[] = result.compensationFailures
    ? [...result.compensationFailures]
    : [];
  // What failed sub-chains reported undoing is journaled with the start: a next owner reports it the same way.
  const reported =
    result.compensated.length > 0 || result.compensationFailures
      ? { compensated: [...result.compensated], ...(failures.length > 0 && { compensationFailures: [...failures] }) }
      : undefined;
  if (!journal || (await journal.start(result.error, reported))) {
    for (const unit of steps) {
      const { entry, error } = await undo(calls, recorder, run, unit);
      if (error) failures.push({ step: unit.id, error });
      else result.compensated.push(unit.id);
      trace.steps.push(entry);
      if (journal && !(await journal.undone(unit.id, entry, error))) break;
    }
  }
  if (failures.length > 0) result.compensationFailures = failures;
  const ended = calls.now();
  trace.endedAt = iso(ended);
  trace.totalLatencyMs = ended - run.startedAt;
}

/**
 * Undoes one step through the same pipeline as a step, with a deadline of its own — the run's may
 * have passed, and an undo must still be attempted. A failed undo is reported, never hidden.
 */
async function undo(
  calls: Calls,
  recorder: Recorder,
  run: CompensationRun,
  unit: UndoUnit,
): Promise<{ entry: TraceStep; error: ChainErrorInfo | undefined }> {
  const { step, id, scope } = unit;
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
    ctx.undoes = undoneWrite(calls, site, unit);
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

/**
 * The write an undo takes back, keyed as when it ran (its input and key built again from the same
 * scope), so that once undone its kept result answers no later call with the key. Undefined when the
 * write has no key in the idempotency store (a durable run's journal keeps it) or its key cannot be
 * built again: the undo still runs.
 */
function undoneWrite(calls: Calls, site: CallSite, unit: UndoUnit): UndoneWrite | undefined {
  const { step, id, scope, generation, ran } = unit;
  const tool = step.tool;
  if (tool === undefined || tool.effect === 'read' || step.resolveInput === undefined) return undefined;
  try {
    const parsed = parseSchema(tool.input, step.resolveInput(scope));
    if (!parsed.success) return undefined;
    const key = (step.step as ToolStep).idempotencyKey?.(scope);
    // Keyed as it ran: with the context of its own chain (a sub-chain's schema may have dropped fields).
    const write = callContext(calls, { ...site, context: scope.context }, id, tool, parsed.data, key);
    if (write.storeKey === undefined || keptByJournal(write)) return undefined;
    const output = (scope.results as Record<string, unknown>)[step.id];
    return {
      storeKey: write.storeKey,
      ttlMs: tool.idempotencyTtlMs,
      generation: generation ?? 0,
      output,
      endedAt: traceEnd(ran),
    };
  } catch {
    return undefined;
  }
}
