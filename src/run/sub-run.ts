// Chains run inside a step (`chain`, `forEach`, `branch`, `loop`, §12): each is an execution of its
// own — the same scheduler, step kinds, policies and journal — whose step ids carry the step's as a
// prefix (`audit/find`, `done/3/complete`), so events, traces, idempotency keys and the journal name
// them apart. It emits no run-level events and ends as an outcome of its step, not as a result.
import type { Chain } from '../define/chain.js';
import { parseSchema } from '../define/schema.js';
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/step-kinds.js';
import type { StepCommon } from '../define/step-common.js';
import { toErrorInfo } from '../errors/messages.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { TraceStep } from '../observe/trace.js';
import type { AbortScope } from '../policies/abort.js';
import type { JournalEntry } from '../stores/run-store.js';
import { failureInfo } from './call-context.js';
import { describeThrown, iso, StepError, type Execution, type StepOutcome, type UndoJournal } from './execution.js';
import { schemaFailure } from './pipeline.js';
import { askInProcess, gateQuestion, gateTool } from './gate.js';
import { lastResult, outputFailed, segmentResult, type EndedSegment } from './segment-end.js';
import type { NestedEnd, StepHost } from './step-host.js';
import { nullRecord } from '../util/record.js';

export type { NestedEnd } from './step-host.js';

const NONE: readonly never[] = Object.freeze([]);

/**
 * Runs `chain` with `input` inside the step `prefix` of `host`'s run: input (and context, if the
 * sub-chain declares a schema) checked, journaled sub-steps of an earlier segment not run again,
 * aborted with `abortWith`. Resolves with its outcome; never rejects.
 *
 * @example
 * ```ts
 * const end = await runNested(host, 'audit', auditChain, { count: 3 }, host.abort);
 * ```
 */
export function runNested(
  host: StepHost,
  prefix: string,
  chain: Chain,
  input: unknown,
  abortWith: AbortScope,
): Promise<NestedEnd> {
  const parent = host.exec;
  const parsed = parseSchema(chain.input, input);
  if (!parsed.success)
    return Promise.resolve(
      failedEnd(
        host,
        prefix,
        schemaFailure(
          'invalid_step_input',
          `Input for chain ${chain.name} (step ${prefix}) does not match its schema`,
          parsed.error.issues,
        ),
      ),
    );
  let context = parent.context;
  if (chain.context) {
    const ctx = parseSchema(chain.context, context);
    if (!ctx.success)
      return Promise.resolve(
        failedEnd(
          host,
          prefix,
          schemaFailure(
            'invalid_context',
            `The context does not match chain ${chain.name}'s context schema (step ${prefix})`,
            ctx.error.issues,
            'invalid_input',
          ),
        ),
      );
    context = ctx.data as Record<string, unknown>;
  }
  const results = nullRecord<unknown>();
  // Most sub-chain runs start fresh: they share one empty `done` and `priorTrace` (read only).
  let done: readonly string[] = NONE;
  let priorTrace: readonly TraceStep[] = NONE;
  let generations: Map<string, number> | undefined;
  const prior = parent.priorNested?.get(prefix);
  if (prior !== undefined && prior.length > 0) {
    const ids: string[] = [];
    const traces: TraceStep[] = [];
    const start = prefix.length + 1;
    for (const e of prior) {
      const id = e.step.slice(start);
      ids.push(id);
      if (e.skipped !== true) results[id] = e.value;
      if (e.trace) traces.push(e.trace);
      if (e.generation !== undefined) (generations ??= new Map()).set(e.step, e.generation);
    }
    done = ids;
    priorTrace = traces;
  }
  const now = host.calls.now();
  // One literal with every field (absent ones undefined): a spread of conditional objects per run
  // would allocate each of them first; every `forEach` item makes one of these.
  const exec: Execution = {
    chain,
    runId: parent.runId,
    traceId: parent.traceId,
    sessionId: parent.sessionId,
    input: parsed.data,
    context,
    results,
    done,
    priorTrace,
    startedAt: now,
    segmentStart: now,
    deadlineAt: host.deadlineAt,
    resumed: done.length > 0,
    nested: { prefix, abortWith },
    confirm: parent.confirm,
    journal: parent.journal,
    durable: parent.durable,
    interrupted: parent.interrupted,
    priorNested: parent.priorNested,
    beforeWrite: parent.beforeWrite,
    approvedGate: parent.approvedGate,
    decidedBy: parent.decidedBy,
    kept: parent.kept,
    parks: parent.parks,
    generations,
    // Its own undos (it failed) are journaled as the run's are, so a next owner does not undo them again; the
    // run compensates only if it fails in turn (a failure collected by a forEach goes on).
    ...(parent.undoJournal && { undoJournal: nestedUndoJournal(parent.undoJournal) }),
    ...(parent.redo && { redo: parent.redo }),
  };
  return host.nest(exec);
}

/** A sub-chain run that failed before its first step. */
function failedEnd(host: StepHost, prefix: string, failure: Parameters<typeof toErrorInfo>[0]): NestedEnd {
  return {
    outcome: { kind: 'failed', error: toErrorInfo(failure, { step: prefix }, host.calls.retryTable) },
    trace: [],
  };
}

/**
 * The end of a sub-chain's run (the executor's `finished` for a nested execution): its output, or
 * its failure after its own completed steps were compensated, or a decline, or a gate it stopped
 * at (`at`: the gated step's id, `done/3/delete`), which parks the whole run as one gate, or a
 * sleep or waitFor it parked at (the same way).
 *
 * @example
 * ```ts
 * const end = await nestedEnd(run);
 * ```
 */
export function nestedEnd(run: EndedSegment): NestedEnd | Promise<NestedEnd> {
  const { exec } = run;
  exec.nested!.abortWith.unlink(run.abort);
  const stop = run.stopped;
  if (!stop) {
    try {
      const value = exec.chain.output ? exec.chain.output(run.scope) : lastResult(run);
      return { outcome: { kind: 'ok', value, skipped: false }, trace: run.traceEntries(), undo: run.undoUnits() };
    } catch (error) {
      // Its steps are done: it fails as a failed step does, undoing them.
      return failedNested(run, outputFailed(run, error));
    }
  }
  const { outcome } = stop;
  if (outcome.kind === 'declined')
    // Named by the innermost declined step, as a decline through a resume is.
    return {
      outcome: { ...outcome, at: outcome.at ?? run.stepKey(exec.chain.plan[stop.index]!) },
      trace: run.traceEntries(),
    };
  if (outcome.kind === 'gate') {
    // Named by the innermost gated step: a gate deeper down arrives with its `at` already set.
    const step = exec.chain.plan[stop.index]!;
    const at = outcome.at ?? run.stepKey(step);
    // `undo`: what it completed before the gate, undone if the run fails instead of parking (a failure outranks a
    // gate).
    return {
      outcome: { ...outcome, at, tool: outcome.tool ?? gateTool(step) },
      trace: run.traceEntries(),
      undo: run.undoUnits(),
    };
  }
  if (outcome.kind === 'wait')
    // A sleep or waitFor parks the whole (durable) run, named by its own id; on waking, the sub-chain runs again from
    // its journal.
    return {
      outcome: { ...outcome, at: outcome.at ?? run.stepKey(exec.chain.plan[stop.index]!) },
      trace: run.traceEntries(),
      undo: run.undoUnits(),
    };
  return failedNested(run, stop);
}

/**
 * A sub-chain's failure: the full segment end compensates its own completed steps. The other ends are
 * values, not promises: the item's run settles without an extra hop.
 */
function failedNested(run: EndedSegment, stop: NonNullable<EndedSegment['stopped']>): Promise<NestedEnd> {
  const { error } = stop.outcome as Extract<StepOutcome, { kind: 'failed' }>;
  return Promise.resolve(segmentResult(run, stop)).then((result): NestedEnd => {
    if (result.status !== 'failed') return { outcome: { kind: 'failed', error }, trace: result.trace.steps };
    const { compensated, compensationFailures } = result;
    // What it undid goes up with its failure, into the run's `compensated` (a step's failure has no result of its own).
    const undone = compensated.length > 0 || compensationFailures ? { compensated, compensationFailures } : undefined;
    return {
      outcome: undone ? { kind: 'failed', error: result.error, undone } : { kind: 'failed', error: result.error },
      trace: result.trace.steps,
    };
  });
}

/**
 * A sub-chain's input, built from `scope` by the step's resolver; a resolver that throws is the step's failure.
 *
 * @example
 * ```ts
 * const input = nestedInput(step, call.resolveInput, host.scope);
 * ```
 */
export function nestedInput(step: PlannedStep, resolve: (scope: Scope) => unknown, scope: Scope): unknown {
  try {
    return resolve(scope);
  } catch (error) {
    throw new StepError({
      category: 'internal',
      code: 'input_failed',
      message: `Step ${step.id}: building the sub-chain's input threw: ${describeThrown(error)}`,
    });
  }
}

/**
 * The trace entry of one unit nested under a step (a `forEach` item, a `loop` iteration): `id` is
 * `step/index`, `children` its sub-chain's steps.
 *
 * @example
 * ```ts
 * const entry = unitEntry(4, 'done/3', end, started, now());
 * ```
 */
export function unitEntry(stepNumber: number, id: string, end: NestedEnd, started: number, ended: number): TraceStep {
  const { outcome } = end;
  const status = outcome.kind === 'ok' ? 'success' : outcome.kind === 'declined' ? 'declined' : 'error';
  const entry: TraceStep = {
    stepNumber,
    id,
    status,
    attempts: 0,
    latencyMs: ended - started,
    startedAt: iso(started),
    children: end.trace,
  };
  if (outcome.kind === 'failed') entry.error = outcome.error;
  return entry;
}

/**
 * The journaled units (items, iterations) of step `prefix` from an earlier segment, by index.
 *
 * @example
 * ```ts
 * const prior = priorUnits(host.exec, 'done'); // Map { 0 => entry, 1 => entry }
 * ```
 */
export function priorUnits(exec: Execution, prefix: string): Map<number, JournalEntry> | undefined {
  const entries = exec.priorNested?.get(prefix);
  if (!entries) return undefined;
  const units = new Map<number, JournalEntry>();
  for (const e of entries) {
    const n = Number(e.step.slice(prefix.length + 1));
    if (Number.isSafeInteger(n)) units.set(n, e);
  }
  return units;
}

/**
 * Journals a finished unit (item, iteration) of a durable run before it counts as done (and keeps it
 * for a gate's checkpoint, {@link Execution.kept}); resolves at once without a journal. Resolves
 * `false`, or rejects, when the store refused or failed.
 *
 * @example
 * ```ts
 * await journalUnit(host.exec, { step: 'done/3', value, trace: entry });
 * ```
 */
export function journalUnit(exec: Execution, entry: JournalEntry): Promise<unknown> {
  exec.kept?.push(entry);
  if (exec.journal === undefined) return Promise.resolve(true);
  try {
    return Promise.resolve(exec.journal(entry));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * A failure of a unit (a journal that refused or threw) as the error a collected item or the step carries.
 *
 * @example
 * ```ts
 * const error = unitFailure(host, 'done/3', thrown);
 * ```
 */
export function unitFailure(host: StepHost, step: string, error: unknown): ChainErrorInfo {
  if (error === false)
    error = new StepError({
      category: 'conflict',
      code: 'journal_refused',
      message: `Step ${step} was not journaled: the run store refused it (another runner may own the run now).`,
    });
  return failureInfo(host.calls, error, { step, attempts: 0 }, undefined, false);
}

/**
 * A step behind its `confirm` (if any; a step that runs chains, or a select, compute, sleep or
 * waitFor step): asked in-process, or the run stops at the gate before it runs (before any of its
 * sub-chains starts); approved (or ungated), `run` runs it.
 *
 * @example
 * ```ts
 * return gated(host, step, () => new ItemRun(...).start());
 * ```
 */
export function gated(
  host: StepHost,
  step: PlannedStep,
  run: () => StepOutcome | Promise<StepOutcome>,
): StepOutcome | Promise<StepOutcome> {
  const { confirm } = step.step as StepCommon;
  const { exec } = host;
  if (!confirm || exec.approvedGate === host.stepKey(step)) return run();
  const question = gateQuestion(host, step, confirm);
  if (!exec.confirm) return { kind: 'gate', prompt: question.prompt, details: question.details };
  return askInProcess(host, step, question).then((yes) => (yes ? run() : { kind: 'declined' as const }));
}

/** A sub-chain's undo journal: each undo recorded in its run's journal, without marking the run compensating. */
function nestedUndoJournal(journal: UndoJournal): UndoJournal {
  return { start: () => true, undone: (step, entry, error) => journal.undone(step, entry, error) };
}
