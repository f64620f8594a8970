// Runs one execution segment of a chain: the scheduler starts ready steps, the step kinds run them,
// the recorder records how each ended, an optional journal keeps them (durable runs), and the end
// becomes a result — output, failure (after compensation), decline, or a run parked at a gate.
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/step-kinds.js';
import { RunAbortReason } from '../errors/failure.js';
import { complexityOf } from '../guidance/timing.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { RunResult } from '../observe/result.js';
import type { ToolTransition, TraceStep } from '../observe/trace.js';
import { transitionFrom, type LastCall } from '../observe/transitions.js';
import { abortAtDeadline, AbortScope, onSignalAbort, untilAborted } from '../policies/abort.js';
import type { CallContext } from '../policies/types.js';
import { failureInfo } from './call-context.js';
import { DONE, isThenable, PENDING, StepError, type Execution, type StepOutcome } from './execution.js';
import { traceEntry } from './trace-entry.js';
import { Scheduler } from './scheduler.js';
import type { UndoUnit } from './compensate.js';
import { nestedEnd, type NestedEnd } from './sub-run.js';
import { preconditionFailure } from './preconditions.js';
import { priorStepUndo } from './prior-undo.js';
import { concludeRun, type EndingRun } from './run-end.js';
import { stepBody } from './step-kinds.js';
import type { ExecutorParts } from './step-host.js';
import { StepRun } from './step-run.js';
import { logStep } from './run-log.js';
import { journalEntry } from './journal.js';

/**
 * Runs one execution segment to its end and returns the result; never throws for run-time failures.
 *
 * @example
 * ```ts
 * const result = await execute(parts, {
 *   chain, runId, traceId, input, context,
 *   results: Object.create(null), done: [], priorTrace: [], startedAt: now(), resumed: false,
 * });
 * ```
 */
export function execute<O>(parts: ExecutorParts, exec: Execution): Promise<RunResult<O>> {
  return new Run(parts, exec).start() as Promise<RunResult<O>>;
}

/** The state of one execution segment; it is also the call site of its steps' calls. */
class Run extends Scheduler implements EndingRun {
  readonly scope: Scope;
  readonly deadlineAt: number;
  private readonly traceSteps: (TraceStep | undefined)[];
  readonly segmentStart: number;
  lastCall: LastCall | undefined;
  /** By plan index: the completed sub-chain steps with `compensate` of steps that ran chains (made at the first). */
  private nestedUndo: (UndoUnit[] | undefined)[] | undefined = undefined;
  private lastToolIndex = -1;
  private resolve: ((result: RunResult | Promise<RunResult>) => void) | undefined;
  offCallerAbort: (() => void) | undefined;
  /** '' for a run; `audit/` for the sub-chain run of step `audit` (run/sub-run.ts). */
  readonly prefix: string;

  // Fields are what every run in flight holds: the parts are reached through one, the rest are getters.
  constructor(
    private readonly parts: ExecutorParts,
    readonly exec: Execution,
  ) {
    super(exec.chain.plan, exec.results, new AbortScope(), exec.done);
    this.scope = { input: exec.input, context: exec.context, results: exec.results };
    this.traceSteps = new Array<TraceStep | undefined>(this.plan.length);
    this.segmentStart = exec.segmentStart ?? this.calls.now();
    this.deadlineAt = exec.deadlineAt ?? this.segmentStart + exec.chain.timeoutMs;
    this.prefix = exec.nested === undefined ? '' : `${exec.nested.prefix}/`;
    if (exec.resumed && exec.sessionId === undefined && exec.nested === undefined)
      this.lastCall = this.recorder.transitions.take(exec.runId);
    for (const t of exec.priorTrace) this.traceSteps[t.stepNumber - 1] = t;
  }

  get calls(): ExecutorParts['calls'] {
    return this.parts.calls;
  }
  get recorder(): ExecutorParts['recorder'] {
    return this.parts.recorder;
  }
  get gates(): ExecutorParts['gates'] {
    return this.parts.gates;
  }
  /** A run without a session is its own session: it keeps its last call itself (no shared entry per run). */
  get sessionKey(): string {
    return this.exec.sessionId ?? this.exec.runId;
  }

  // The call site of the run's steps (see call-context.ts).
  get runId(): string {
    return this.exec.runId;
  }
  get traceId(): string {
    return this.exec.traceId;
  }
  get sessionId(): string | undefined {
    return this.exec.sessionId;
  }
  get chain(): string {
    return this.exec.chain.name;
  }
  get context(): Readonly<Record<string, unknown>> {
    return this.exec.context;
  }
  get deadline(): number {
    return this.deadlineAt;
  }
  get durable(): Execution['durable'] {
    return this.exec.durable;
  }
  get startedAt(): number {
    return this.exec.startedAt;
  }

  // What the result sees of the ended segment (see segment-end.ts).
  get stopped(): Scheduler['stop'] {
    return this.stop;
  }
  traceEntries(): TraceStep[] {
    // Sized exactly, not filtered: every result keeps this array, and filter's keeps spare capacity.
    const { traceSteps } = this;
    let n = 0;
    for (const t of traceSteps) if (t !== undefined) n++;
    const entries = new Array<TraceStep>(n);
    n = 0;
    for (const t of traceSteps) if (t !== undefined) entries[n++] = t;
    return entries;
  }
  lastTool(): string | undefined {
    return this.lastToolIndex >= 0 ? this.plan[this.lastToolIndex]!.tool!.name : undefined;
  }
  isDone(step: PlannedStep): boolean {
    return this.state[step.index] === DONE;
  }
  nest(exec: Execution): Promise<NestedEnd> {
    return new Run(this, exec).start() as unknown as Promise<NestedEnd>;
  }
  stepKey(step: PlannedStep): string {
    return this.prefix === '' ? step.id : this.prefix + step.id;
  }
  undoUnits(): UndoUnit[] {
    const { plan, scope, nestedUndo } = this;
    const { results } = this.exec;
    let units: UndoUnit[] | undefined;
    for (const step of plan) {
      let nested = nestedUndo?.[step.index];
      // A step running chains done in an earlier segment: what its chains did is known from the journal.
      // One not started in this segment (it was parked at a gate or wait inside, or in flight at a
      // crash, and the run ends before it runs again): what its chains completed then, too.
      if (nested === undefined && step.calls !== undefined && this.exec.priorNested !== undefined) {
        if (this.exec.done.includes(step.id)) nested = priorStepUndo(this.exec, step, this.stepKey(step), scope);
        else if (this.state[step.index] === PENDING)
          nested = priorStepUndo(this.exec, step, this.stepKey(step), scope, true);
      }
      if (nested !== undefined) for (const unit of nested) (units ??= []).push(unit);
      if (step.compensate && this.isDone(step) && step.id in results) {
        const id = this.stepKey(step);
        const ran = this.traceSteps[step.index];
        (units ??= []).push({ step, id, scope, generation: this.exec.generations?.get(id), ran });
      }
    }
    return units ?? [];
  }

  /** Runs the segment; nothing stays suspended while steps are in flight but the steps themselves. */
  start(): Promise<RunResult> {
    const { exec } = this;
    // A sub-chain's run is aborted through its step's scope (linked below), not by `close` directly.
    if (exec.nested === undefined) this.calls.active.add(this.abort);
    // A RunAbortReason as the signal's reason is kept (`runner.cancel`: `run_cancelled`).
    if (exec.signal)
      this.offCallerAbort = onSignalAbort(exec.signal, () =>
        this.abort.abort(
          exec.signal!.reason instanceof RunAbortReason
            ? exec.signal!.reason
            : new RunAbortReason('cancelled', 'The caller cancelled the run.'),
        ),
      );
    exec.stop?.link(this.abort);
    if (exec.nested === undefined) {
      this.recorder.chainStarted(this, exec.resumed);
      if (exec.signalled) this.recorder.signalReceived(exec.runId, exec.signalled.step, exec.signalled.signal);
    } else exec.nested.abortWith.link(this.abort);
    if (!exec.resumed) {
      const error = preconditionFailure(exec.chain.preconditions, this.scope, this.calls.retryTable);
      if (error) this.stop = { index: -1, outcome: { kind: 'failed', error } };
    }
    // Only its undos are left.
    else if (exec.compensating) this.stop = { index: -1, outcome: { kind: 'failed', error: exec.compensating.error } };
    if (this.stop) return Promise.resolve(exec.nested === undefined ? concludeRun(this) : (nestedEnd(this) as never));
    return new Promise<RunResult>((resolve) => {
      this.resolve = resolve;
      this.pump();
    });
  }

  protected finished(): void {
    this.resolve!(this.exec.nested === undefined ? concludeRun(this) : (nestedEnd(this) as never));
  }

  protected startStep(step: PlannedStep): void {
    const started = this.calls.now();
    this.recorder.stepStarted(this, this.stepKey(step), step.tool?.name, step.index + 1);
    const run = new StepRun(this, step, started);
    let body: StepOutcome | Promise<unknown>;
    try {
      body = stepBody(this, step, run);
    } catch (error) {
      return run.rejected(error);
    }
    if (body instanceof Promise) body.then(run.resolved.bind(run), run.rejected.bind(run));
    else this.endStep(run, body);
  }

  /** Records a finished step (trace entry, learning, events, logs), journals it if asked, and settles it. */
  endStep(run: StepRun, outcome: StepOutcome): void {
    const { step, started, ctx } = run;
    const ended = this.calls.now();
    const entry = traceEntry(
      step.index + 1,
      this.stepKey(step),
      step.tool?.name,
      ctx?.cached ? 'cached' : 'success',
      ctx?.attempt ?? 0,
      started,
      ended,
    );
    if (run.input !== undefined) entry.input = run.input;
    if (run.children !== undefined) entry.children = run.children;
    if (run.undo !== undefined && run.undo.length > 0) (this.nestedUndo ??= [])[step.index] = run.undo;
    if (this.exec.decidedBy !== undefined && entry.id === this.exec.approvedGate) entry.decidedBy = this.exec.decidedBy;
    this.traceSteps[step.index] = entry;
    try {
      this.record(step, entry, outcome, started, ended, ctx);
    } catch {
      // Recording (trace detail, learning, logs) observes the run: whatever it meets, the step still settles.
    }
    if (outcome.kind !== 'ok') return this.settle(step, outcome);
    const generation = ctx === undefined ? 0 : ctx.generation;
    if (generation > 0) (this.exec.generations ??= new Map()).set(entry.id, generation);
    if (this.exec.kept !== undefined && this.exec.nested !== undefined)
      this.exec.kept.push(journalEntry(entry, outcome, generation));
    if (this.exec.journal !== undefined) this.journal(step, entry, outcome, generation);
    else this.settle(step, outcome);
  }

  failed(step: PlannedStep, error: unknown, ctx: CallContext | undefined): StepOutcome {
    const info = failureInfo(
      this.calls,
      error,
      { step: this.stepKey(step), ...(step.tool && { tool: step.tool.name }), attempts: ctx?.attempt ?? 0 },
      ctx,
      true,
    );
    // Secrets of the call's input, the chain's input and context leave in no text (docs/ARCHITECTURE.md, Secrets);
    // failures only.
    maskError(info, secretMask(this.calls.redact, ctx?.input, this.exec.input, this.exec.context));
    return { kind: 'failed', error: info };
  }

  /** The trace entry's status and output, what the call teaches, `step:end` and the log lines. */
  private record(
    step: PlannedStep,
    entry: TraceStep,
    outcome: StepOutcome,
    started: number,
    ended: number,
    ctx: CallContext | undefined,
  ): void {
    const { recorder } = this;
    if (outcome.kind !== 'ok') entry.status = ENDED_AS[outcome.kind];
    else if (outcome.skipped) entry.status = 'skipped';
    if (outcome.kind === 'failed') entry.error = outcome.error;
    if (recorder.traceDetail === 'full' && outcome.kind === 'ok' && !outcome.skipped)
      entry.output = recorder.redacted(outcome.value);
    if (step.tool && ctx) {
      if (step.index > this.lastToolIndex) this.lastToolIndex = step.index;
      const tool = step.tool.name;
      const error = outcome.kind === 'failed' ? outcome.error : undefined;
      const transition = this.transition(tool, started, ended, outcome.kind === 'ok');
      recorder.learn({
        tool,
        mode: 'chain',
        session: this.sessionKey,
        runId: this.exec.runId,
        transition,
        started,
        ended,
        error,
        complexity: complexityOf(ctx.input),
      });
    }
    recorder.stepEnded(this, entry);
    logStep(recorder, this, entry, outcome);
  }

  private transition(tool: string, started: number, ended: number, success: boolean): ToolTransition | undefined {
    const { exec } = this;
    if (exec.sessionId !== undefined) return this.recorder.transition(exec.sessionId, tool, started, ended, success);
    const prev = this.lastCall;
    this.lastCall = { tool, endedAt: ended };
    return prev && transitionFrom(prev, exec.runId, tool, started, ended, success);
  }

  /** Durable runs: a step counts as done (and its dependents may start) once the journal kept it. */
  private journal(
    step: PlannedStep,
    entry: TraceStep,
    outcome: Extract<StepOutcome, { kind: 'ok' }>,
    generation: number,
  ): void {
    let answer: unknown;
    try {
      answer = this.exec.journal!(journalEntry(entry, outcome, generation));
    } catch (error) {
      return this.settle(step, this.failed(step, error, undefined));
    }
    if (!isThenable(answer)) return this.journaled(step, outcome, answer);
    answer.then(
      (value) => this.journaled(step, outcome, value),
      (error: unknown) => this.settle(step, this.failed(step, error, undefined)),
    );
  }

  private journaled(step: PlannedStep, outcome: StepOutcome, answer: unknown): void {
    if (answer !== false) return this.settle(step, outcome);
    const refused = new StepError({
      category: 'conflict',
      code: 'journal_refused',
      message: `Step ${step.id} was not journaled: the run store refused it (another runner may own the run now).`,
    });
    this.settle(step, this.failed(step, refused, undefined));
  }

  /** Local async work (a compute step, an async `when`, `confirm`) ends with the run, settled or not. */
  bounded<T>(work: PromiseLike<T>, deadlineMessage: string): Promise<T> {
    const cancel = abortAtDeadline(this.abort, this.deadlineAt, this.calls.now, deadlineMessage);
    return untilAborted(Promise.resolve(work), this.abort).finally(cancel);
  }
}

/** A trace entry's status for each way a step stops the run. */
const ENDED_AS = {
  failed: 'error',
  gate: 'awaiting_confirmation',
  declined: 'declined',
  wait: 'waiting',
} as const satisfies Record<Exclude<StepOutcome['kind'], 'ok'>, TraceStep['status']>;
