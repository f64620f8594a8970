// Runs a compiled chain: schedules ready steps (a DAG from refs), stops at confirmation gates,
// enforces the deadline and cancellation, and turns everything into a result with its trace.
import type { Chain, ComputeStep, SelectStep, ToolStep } from '../define/chain.js';
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/validate.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { classifyError, keepCause, RunAbortReason, type Classified } from '../errors/classify.js';
import { toErrorInfo } from '../errors/messages.js';
import { buildMetadata } from '../guidance/metadata.js';
import { alternativesFor } from '../guidance/alternatives.js';
import { learn } from '../guidance/learn.js';
import { complexityOf } from '../guidance/timing.js';
import { listening, safeEmit } from '../observe/events.js';
import { maskedErr, maskError, maskFailedRun, redact, secretMask } from '../observe/redact.js';
import type { ToolTransition, Trace, TraceStep } from '../observe/trace.js';
import { transitionFrom, type LastCall } from '../observe/transitions.js';
import { compensate } from '../policies/compensate.js';
import { abortAtDeadline, AbortScope, onSignalAbort, untilAborted } from './abort.js';
import { schemaFailure, type CallContext } from './pipeline.js';
import type { ConfirmationRequest, Core, RunOptions, RunResult } from './types.js';
import { parseSchema } from '../define/schema.js';
import { parkAtGate } from './gate.js';
import { computedValue, describeThrown, DONE, isThenable, iso, ok, PENDING, RUNNING, selectItems, SKIPPED, StepError, toolsRun, type Execution, type StepOutcome, type Stopped } from './step.js';

export type { Execution } from './step.js';


/**
 * A step in flight: what it learns on the way (its call context and, with full traces, its input)
 * and how it ends. Its handlers are bound to it rather than closures: a bound function keeps no
 * context, and every step in flight holds a pair.
 */
class StepRun {
  ctx: CallContext | undefined = undefined;
  input: unknown = undefined;
  constructor(readonly run: Run, readonly p: PlannedStep, readonly started: number) {}

  /** A step that called its tool resolves with the tool's output, any other step with its outcome. */
  resolved(result: unknown): void {
    this.run.endStep(this, this.ctx ? ok(result) : (result as StepOutcome));
  }

  rejected(error: unknown): void {
    this.run.endStep(this, this.run.failed(this.p, error, this.ctx));
  }
}

/** Runs one execution segment to its end and returns the result; never throws for run-time failures. */
export function execute<O>(core: Core, x: Execution): Promise<RunResult<O>> {
  return new Run(core, x).execute() as Promise<RunResult<O>>;
}

/** The state of one execution segment. */
class Run {
  private readonly chain: Chain;
  private readonly plan: readonly PlannedStep[];
  private readonly scope: Scope;
  private readonly abort = new AbortScope();
  private readonly state: number[];
  private readonly traceSteps: (TraceStep | undefined)[];

  private readonly segmentStart: number;
  private readonly deadlineAt: number;
  private readonly sessionKey: string;
  // A run without a session is its own session: it keeps its last call itself (no shared entry per run).
  private lastCall: LastCall | undefined;
  private stop: { index: number; outcome: Stopped } | undefined;
  private running = 0;
  private pumping = false;
  private rescan = false;
  private lastToolIndex = -1;
  private firstPending = 0;
  private resolve: ((result: Promise<RunResult>) => void) | undefined;
  private offCallerAbort: (() => void) | undefined;

  constructor(private readonly core: Core, private readonly x: Execution) {
    this.chain = x.chain;
    this.plan = x.chain.plan;
    this.scope = { input: x.input, context: x.context, results: x.results };
    this.state = new Array<number>(this.plan.length).fill(PENDING);
    this.traceSteps = new Array<TraceStep | undefined>(this.plan.length);

    this.segmentStart = x.segmentStart ?? core.now();
    this.deadlineAt = this.segmentStart + x.chain.timeoutMs;
    this.sessionKey = x.sessionId ?? x.runId;
    if (x.resumed) {
      if (x.sessionId === undefined) this.lastCall = core.transitions.take(x.runId);
      const index = new Map(this.plan.map((p) => [p.id, p.index]));
      for (const id of x.done) {
        const i = index.get(id);
        if (i !== undefined) this.state[i] = DONE;
      }
      for (const t of x.priorTrace) this.traceSteps[t.stepNumber - 1] = t;
    }
  }

  /** Runs the segment; nothing stays suspended while steps are in flight but the steps themselves. */
  execute(): Promise<RunResult> {
    const { core, x, chain } = this;
    core.active.add(this.abort);
    if (x.signal) this.offCallerAbort = onSignalAbort(x.signal, () => this.abort.abort(new RunAbortReason('cancelled', 'The caller cancelled the run.')));
    if (listening(core.events, 'chain:start')) {
      safeEmit(core.events, 'chain:start', { runId: x.runId, traceId: x.traceId, chain: chain.name, ...(x.sessionId !== undefined && { sessionId: x.sessionId }), resumed: x.resumed });
    }
    core.logger?.info(this.logFields({ resumed: x.resumed }), `chain ${chain.name} ${x.resumed ? 'resumed' : 'started'}`);

    if (!x.resumed) this.checkPreconditions();
    if (this.stop) return this.conclude();
    return new Promise<RunResult>((resolve) => {
      this.resolve = resolve;
      this.pump();
    });
  }

  private async conclude(): Promise<RunResult> {
    const { core, x, chain } = this;
    const { events, logger } = core;
    this.offCallerAbort?.();
    core.active.delete(this.abort);
    const result = await this.result();
    const mask = result.status === 'failed' ? secretMask(core.redact, x.input, x.context) : undefined;
    if (mask) maskFailedRun(result as Extract<RunResult, { status: 'failed' }>, mask); // before events and logs
    if (x.sessionId === undefined) {
      if (result.status !== 'awaiting_confirmation') core.advisor.forget(x.runId);
      else if (this.lastCall) core.transitions.park(x.runId, this.lastCall); // for the transition after the resume
    }

    if (listening(events, 'chain:end')) {
      safeEmit(events, 'chain:end', {
        runId: x.runId, traceId: x.traceId, chain: chain.name, ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
        status: result.status, durationMs: result.trace.totalLatencyMs, ...(result.status === 'failed' && { error: result.error }), trace: result.trace,
      });
    }
    if (logger) {
      // pino's convention: the original error under `err` (type and stack), masked like every text that leaves.
      if (result.status === 'failed') logger.error(this.logFields({ step: result.error.step, category: result.error.category, code: result.error.code, ...(result.error.cause !== undefined && { err: maskedErr(result.error.cause, mask!) }) }), `chain ${chain.name} failed: ${result.error.message}`);
      else logger.info(this.logFields({ status: result.status, durationMs: result.trace.totalLatencyMs }), `chain ${chain.name} ${result.status}`);
    }
    return result;
  }

  private logFields(extra: Record<string, unknown>): Record<string, unknown> {
    return { runId: this.x.runId, traceId: this.x.traceId, chain: this.chain.name, ...extra };
  }

  private checkPreconditions(): void {
    for (const pre of this.chain.preconditions) {
      let failure: Classified | undefined;
      try {
        if (pre.check(this.scope) !== true) failure = { category: 'invalid_input', code: 'precondition_failed', message: `Precondition failed: ${pre.message}` };
      } catch (error) {
        failure = { category: 'internal', code: 'precondition_error', message: `A precondition threw: ${describeThrown(error)}` };
      }
      if (failure) {
        const details = failure.code === 'precondition_failed' ? { userMessage: pre.message } : {};
        this.stop = { index: -1, outcome: { kind: 'failed', error: toErrorInfo(failure, details, this.core.retryTable) } };
        return;
      }
    }
  }

  /**
   * Starts every step whose dependencies are done, in declaration order; finishes when nothing runs.
   * A step that ends synchronously calls back in here; that call only asks the running loop to rescan.
   */
  private pump(): void {
    if (this.pumping) {
      this.rescan = true;
      return;
    }
    this.pumping = true;
    do {
      this.rescan = false;
      this.launchReady();
    } while (this.rescan);
    this.pumping = false;
    if (this.running === 0) this.resolve!(this.conclude());
  }

  private launchReady(): void {
    const { plan, state } = this;
    if (!this.stop) {
      // Steps before the first pending one never need looking at again: long chains stay linear.
      while (this.firstPending < plan.length && state[this.firstPending] !== PENDING) this.firstPending++;
      for (let i = this.firstPending; i < plan.length; i++) {
        if (state[i] !== PENDING) continue;
        const deps = plan[i]!.deps;
        let ready = true;
        for (let d = 0; d < deps.length; d++) {
          if (state[deps[d]!] !== DONE) {
            ready = false;
            break;
          }
        }
        if (!ready) continue;
        state[i] = RUNNING;
        this.running++;
        this.runStep(plan[i]!);
      }
    }
  }

  private settle(p: PlannedStep, outcome: StepOutcome): void {
    this.running--;
    if (outcome.kind === 'ok') {
      this.state[p.index] = DONE;
      if (!outcome.skipped) this.x.results[p.id] = outcome.value;
    } else if (!this.stop || (outcome.kind === 'failed' && this.stop.outcome.kind === 'gate')) {
      // A failure outranks a pending gate: a run that failed is not checkpointed.
      this.stop = { index: p.index, outcome };
      if (outcome.kind !== 'gate' && this.running > 0) {
        this.abort.abort(new RunAbortReason('cancelled', `Stopped because step ${p.id} ${outcome.kind === 'failed' ? 'failed' : 'was declined'}.`));
      }
    }
    this.pump();
  }

  private runStep(p: PlannedStep): void {
    const { core, x } = this;
    const started = core.now();
    if (listening(core.events, 'step:start')) {
      safeEmit(core.events, 'step:start', { runId: x.runId, traceId: x.traceId, chain: this.chain.name, step: p.id, ...(p.tool && { tool: p.tool.name }), stepNumber: p.index + 1 });
    }
    const step = new StepRun(this, p, started);
    let body: StepOutcome | Promise<unknown>;
    try {
      body = this.stepBody(p, step);
    } catch (error) {
      return step.rejected(error);
    }
    if (body instanceof Promise) body.then(step.resolved.bind(step), step.rejected.bind(step));
    else this.endStep(step, body);
  }

  /** Records a finished step (trace entry, learning, events) and schedules what it unblocked. */
  endStep(step: StepRun, outcome: StepOutcome): void {
    const { p, started, ctx } = step;
    const ended = this.core.now();
    // The trace entry is made when the step ends: a step in flight holds no trace state.
    const status = ctx?.cached ? 'cached' : 'success';
    const attempts = ctx?.attempt ?? 0;
    // One literal per shape: a field added afterwards would cost every entry a property array.
    const entry: TraceStep = p.tool
      ? { stepNumber: p.index + 1, id: p.id, tool: p.tool.name, status, attempts, latencyMs: ended - started, startedAt: iso(started) }
      : { stepNumber: p.index + 1, id: p.id, status, attempts, latencyMs: ended - started, startedAt: iso(started) };
    if (step.input !== undefined) entry.input = step.input;
    this.traceSteps[p.index] = entry;
    try {
      this.record(p, entry, outcome, started, ended, ctx !== undefined, ctx ? complexityOf(ctx.input) : 1);
    } catch {
      // Recording (trace detail, learning, logs) observes the run: whatever it meets, the step still settles.
    }
    this.settle(p, outcome);
  }

  failed(p: PlannedStep, error: unknown, ctx: CallContext | undefined): StepOutcome {
    const failure = error instanceof StepError ? error.failure : classifyError(error, this.core.classifiers);
    const details = { step: p.id, ...(p.tool && { tool: p.tool.name }), attempts: ctx?.attempt ?? 0, ...(error instanceof StepError && error.extra) };
    const info = toErrorInfo(failure, details, ctx?.retry ?? this.core.retryTable);
    if (!(error instanceof StepError)) keepCause(info, error); // the original error (API.md §9)
    info.alternatives = alternativesFor(this.core.guidance, info, ctx ? { complexity: complexityOf(ctx.input) } : {});
    // Secrets of the call's input, the chain's input and context leave in no text (API.md §6); failures only.
    maskError(info, secretMask(this.core.redact, ctx?.input, this.x.input, this.x.context));
    return { kind: 'failed', error: info };
  }

  /** Trace entry, transition, events and logs of a finished step. */
  private record(p: PlannedStep, entry: TraceStep, outcome: StepOutcome, started: number, ended: number, called: boolean, complexity: number): void {
    const { core, x } = this;
    switch (outcome.kind) {
      case 'ok': entry.status = outcome.skipped ? 'skipped' : entry.status; break;
      case 'failed': entry.status = 'error'; entry.error = outcome.error; break;
      case 'gate': entry.status = 'awaiting_confirmation'; break;
      case 'declined': entry.status = 'declined'; break;
    }
    if (core.traceDetail === 'full' && outcome.kind === 'ok' && !outcome.skipped) entry.output = redact(outcome.value, core.redact);
    if (p.tool && called) {
      if (p.index > this.lastToolIndex) this.lastToolIndex = p.index;
      const tool = p.tool.name;
      const error = outcome.kind === 'failed' ? outcome.error : undefined;
      learn(core, this.sessionKey, this.transition(tool, started, ended, outcome.kind === 'ok'), tool, 'chain', started, ended, error, complexity, this.x.runId);
    }
    if (listening(core.events, 'step:end')) {
      safeEmit(core.events, 'step:end', {
        runId: x.runId, traceId: x.traceId, chain: this.chain.name, step: p.id, ...(p.tool && { tool: p.tool.name }),
        status: entry.status, attempts: entry.attempts, latencyMs: entry.latencyMs, ...(entry.error && { error: entry.error }),
      });
    }
    const log = core.logger;
    if (log) {
      if (outcome.kind === 'ok') log.debug(this.logFields({ step: p.id, input: entry.input, output: redact(outcome.value, core.redact) }), `step ${p.id} ${entry.status}`);
      else if (outcome.kind === 'failed' && outcome.error.category === 'timeout') log.warn(this.logFields({ step: p.id, code: outcome.error.code }), `step ${p.id} timed out`);
    }
  }

  private transition(tool: string, started: number, ended: number, success: boolean): ToolTransition | undefined {
    const { x } = this;
    if (x.sessionId !== undefined) return this.core.transitions.record(x.sessionId, tool, started, ended, success);
    const prev = this.lastCall;
    this.lastCall = { tool, endedAt: ended };
    return prev && transitionFrom(prev, x.runId, tool, started, ended, success);
  }

  private stepBody(p: PlannedStep, inFlight: StepRun): StepOutcome | Promise<unknown> {
    const { scope } = this;
    const step = p.step;
    if (step.when) {
      const whenFailed = (error: unknown): never => {
        if (error instanceof RunAbortReason) throw error;
        throw new StepError({ category: 'internal', code: 'when_failed', message: `Step ${p.id}: \`when\` threw: ${describeThrown(error)}` });
      };
      let go: unknown;
      try {
        go = step.when(scope);
      } catch (error) {
        whenFailed(error);
      }
      // An async `when` is awaited (a pending Promise is not `false`), within the run's deadline.
      if (isThenable(go)) return this.bounded(go, `\`when\` of step ${p.id}`).then((v) => (v === false ? SKIPPED : this.kindBody(p, inFlight)), whenFailed);
      if (go === false) return SKIPPED;
    }
    return this.kindBody(p, inFlight);
  }

  private kindBody(p: PlannedStep, inFlight: StepRun): StepOutcome | Promise<unknown> {
    const step = p.step;
    if (p.kind === 'compute') return this.compute(p, step as ComputeStep);
    if (p.kind === 'select') return selectItems(p, step as SelectStep, this.scope);
    return this.callTool(p, step as ToolStep, inFlight);
  }

  private compute(p: PlannedStep, step: ComputeStep): StepOutcome | Promise<StepOutcome> {
    const threw = (error: unknown): never => {
      if (error instanceof RunAbortReason) throw error;
      throw new StepError({ category: 'internal', code: 'compute_failed', message: `Step ${p.id}: compute threw: ${describeThrown(error)}` });
    };
    let value: unknown;
    try {
      value = step.compute(this.scope);
    } catch (error) {
      threw(error);
    }
    if (isThenable(value)) return this.bounded(value, `compute step ${p.id}`).then((v) => computedValue(p, step, v), threw);
    return computedValue(p, step, value);
  }

  /**
   * Local async work (a compute step, an async `when`) ends with the run: at its deadline, on the
   * caller's signal or on `close()`, whether or not the promise ever settles.
   */
  private bounded<T>(work: PromiseLike<T>, what: string): Promise<T> {
    const cancel = abortAtDeadline(this.abort, this.deadlineAt, this.core.now, `Chain ${this.chain.name} passed its deadline in ${what}.`);
    return untilAborted(Promise.resolve(work), this.abort).finally(cancel);
  }



  private callTool(p: PlannedStep, step: ToolStep, inFlight: StepRun): StepOutcome | Promise<unknown> {
    const { core, x, scope } = this;
    const tool = p.tool!;
    let raw: unknown;
    try {
      raw = p.resolveInput!(scope);
    } catch (error) {
      throw new StepError({ category: 'internal', code: 'input_failed', message: `Step ${p.id}: building the input threw: ${describeThrown(error)}` });
    }
    const parsed = parseSchema(tool.input, raw);
    if (!parsed.success) throw new StepError(schemaFailure('invalid_step_input', `Input for tool ${tool.name} (step ${p.id}) does not match its schema`, parsed.error.issues));
    if (core.traceDetail === 'full') inFlight.input = redact(parsed.data, core.redact);

    if (step.confirm && x.approvedGate !== p.id) {
      let prompt: string;
      let details: unknown;
      try {
        prompt = typeof step.confirm.prompt === 'function' ? step.confirm.prompt(scope) : step.confirm.prompt;
        details = step.confirm.details?.(scope);
      } catch (error) {
        throw new StepError({ category: 'internal', code: 'confirm_failed', message: `Step ${p.id}: building the confirmation threw: ${describeThrown(error)}` });
      }
      if (!x.confirm) return { kind: 'gate', prompt, details };
      const request = { step: p.id, tool: tool.name, prompt, expiresAt: iso(this.deadlineAt), ...(details !== undefined && { details }) };
      if (listening(core.events, 'confirmation:requested')) {
        safeEmit(core.events, 'confirmation:requested', { runId: x.runId, traceId: x.traceId, chain: this.chain.name, step: p.id, tool: tool.name, prompt, expiresAt: request.expiresAt });
      }
      return this.askInProcess(x.confirm, request).then((yes) => (yes ? this.invoke(p, step, parsed.data, inFlight) : { kind: 'declined' as const }));
    }
    return this.invoke(p, step, parsed.data, inFlight);
  }

  /** Calls the tool; resolves with its output (no wrapping hop: every step in flight would keep one). */
  private invoke(p: PlannedStep, step: ToolStep, input: unknown, inFlight: StepRun): Promise<unknown> {
    const { core, x, scope } = this;
    const tool = p.tool!;

    // Every field in the literal, even unset ones: fields added later cost each context a property array.
    const ctx: CallContext = {
      tool,
      input,
      runId: x.runId,
      traceId: x.traceId,
      sessionId: x.sessionId,
      chain: this.chain.name,
      step: p.id,
      context: x.context,
      idempotencyKey: tool.effect === 'read' ? undefined : step.idempotencyKey ? step.idempotencyKey(scope)
        : tool.idempotencyKey ? tool.idempotencyKey(input, { tool: tool.name, runId: x.runId, step: p.id, sessionId: x.sessionId, context: x.context }) : `${x.runId}:${p.id}`,
      run: this.abort,
      deadlineAt: this.deadlineAt,
      retry: core.retryFor(tool, step.retry),
      attempt: 0,
      timeoutMs: step.timeoutMs ?? tool.timeoutMs,
      cached: false,
      attemptScope: undefined,
      reached: false,
    };
    inFlight.ctx = ctx;
    return core.call(ctx);
  }

  /** Asks the in-process `confirm` callback, within the deadline. */
  private async askInProcess(confirm: NonNullable<RunOptions['confirm']>, request: ConfirmationRequest): Promise<boolean> {
    const cancelDeadline = abortAtDeadline(this.abort, this.deadlineAt, this.core.now, `Chain ${this.chain.name} passed its deadline while waiting for confirmation.`);
    try {
      return (await untilAborted(Promise.resolve(confirm(request)), this.abort)) === true;
    } finally {
      cancelDeadline();
    }
  }

  private async result(): Promise<RunResult> {
    const { core, x, chain, plan } = this;
    const ended = core.now();
    const trace: Trace = {
      traceId: x.traceId,
      runId: x.runId,
      chain: chain.name,
      startedAt: iso(x.startedAt),
      endedAt: iso(ended),
      totalLatencyMs: ended - x.startedAt,
      status: 'completed',
      steps: this.traceSteps.filter((t): t is TraceStep => t !== undefined),
    };
    if (x.sessionId !== undefined) trace.sessionId = x.sessionId;
    const lastTool = this.lastToolIndex >= 0 ? plan[this.lastToolIndex]!.tool!.name : undefined;
    const base = {
      runId: x.runId,
      chain: chain.name,
      trace,
      metadata: buildMetadata(core.guidance, {
        chain,
        ...(lastTool && { lastTool }),
        actualDurationMs: ended - this.segmentStart,
        sessionTools: x.sessionId !== undefined ? core.transitions.recent(x.sessionId) : toolsRun(trace.steps),
        advice: lastTool ? core.advisor.advice(this.sessionKey, lastTool) : [],
      }),
    };
    const failed = (error: ChainErrorInfo): RunResult => ({ status: 'failed', error, completed: { ...x.results }, compensated: [], ...base });

    let result: RunResult;
    const outcome = this.stop?.outcome;
    if (!outcome) {
      try {
        result = { status: 'completed', output: chain.output ? chain.output(this.scope) : this.lastResult(), ...base };
      } catch (error) {
        result = failed(toErrorInfo({ category: 'internal', code: 'output_failed', message: `Chain ${chain.name}: \`output\` threw: ${describeThrown(error)}` }, {}, core.retryTable));
      }
    } else if (outcome.kind === 'failed') {
      result = failed(outcome.error);
      await this.undo(result as Extract<RunResult, { status: 'failed' }>, trace);
    } else if (outcome.kind === 'declined') {
      result = { status: 'declined', step: plan[this.stop!.index]!.id, ...base };
    } else {
      result = await parkAtGate(core, x, chain, plan.filter((s) => this.state[s.index] === DONE).map((s) => s.id), this.deadlineAt, plan[this.stop!.index]!, outcome, base, failed);
    }
    trace.status = result.status;
    return result;
  }

  /** Compensates completed steps (newest first) after a failure; the runner being closed skips it. */
  private async undo(result: Extract<RunResult, { status: 'failed' }>, trace: Trace): Promise<void> {
    const todo = this.plan.filter((p) => p.compensate && this.state[p.index] === DONE && p.id in this.x.results).reverse();
    if (todo.length === 0) return;
    if (this.abort.reason instanceof RunAbortReason && this.abort.reason.kind === 'closed') {
      result.compensationFailures = todo.map((p) => ({ step: p.id, error: toErrorInfo({ category: 'cancelled', code: 'runner_closed', message: 'Not compensated: the runner was closed.' }, { step: p.id, tool: p.compensate!.tool.name }) }));
      return;
    }
    const { x } = this;
    const done = await compensate(this.core, { chain: this.chain.name, runId: x.runId, traceId: x.traceId, ...(x.sessionId !== undefined && { sessionId: x.sessionId }), context: x.context, scope: this.scope }, todo);
    result.compensated = done.compensated;
    if (done.failures.length > 0) result.compensationFailures = done.failures;
    trace.steps.push(...done.trace);
    trace.endedAt = iso(this.core.now());
    trace.totalLatencyMs = this.core.now() - x.startedAt;
  }

  private lastResult(): unknown {
    for (let i = this.plan.length - 1; i >= 0; i--) {
      const id = this.plan[i]!.id;
      if (this.state[i] === DONE && id in this.x.results) return this.x.results[id];
    }
    return undefined;
  }

  /** Stores the checkpoint of a run stopped at a gate and returns `awaiting_confirmation`. */
}

