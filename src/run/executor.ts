// Runs a compiled chain: schedules ready steps (a DAG from refs), stops at confirmation gates,
// enforces the deadline and cancellation, and turns everything into a result with its trace.
import { nanoid } from 'nanoid';
import type { Chain } from '../define/chain.js';
import type { PlannedStep } from '../define/validate.js';
import type { ComputeStep, SelectStep, ToolStep } from '../define/chain.js';
import type { Scope } from '../define/ref.js';
import { classifyError, RunAbortReason, type Classified } from '../errors/classify.js';
import { toErrorInfo } from '../errors/messages.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { buildMetadata } from '../guidance/metadata.js';
import { listening, safeEmit } from '../observe/events.js';
import { redact } from '../observe/redact.js';
import type { Trace, TraceStep } from '../observe/trace.js';
import { hashContext, signToken } from './checkpoint.js';
import { schemaFailure, type CallContext } from './pipeline.js';
import type { ConfirmationRequest, Core, RunOptions, RunResult } from './types.js';

/** One execution segment of a chain: a fresh run, or the part after a resumed gate. */
export interface Execution {
  chain: Chain;
  runId: string;
  traceId: string;
  sessionId?: string;
  input: unknown;
  context: Record<string, unknown>;
  /** Results of steps completed earlier (on resume). */
  results: Record<string, unknown>;
  /** Ids of steps completed or skipped earlier (on resume). */
  done: readonly string[];
  priorTrace: readonly TraceStep[];
  /** Epoch ms the run first started (kept across a resume). */
  startedAt: number;
  /** The gate the user approved (on resume). */
  approvedGate?: string;
  confirm?: RunOptions['confirm'];
  signal?: AbortSignal;
  resumed: boolean;
}

type StepOutcome =
  | { kind: 'ok'; value: unknown; skipped: boolean }
  | { kind: 'failed'; error: ChainErrorInfo }
  | { kind: 'gate'; prompt: string; details: unknown }
  | { kind: 'declined' };

type Stop = { index: number; outcome: Exclude<StepOutcome, { kind: 'ok' }> };

const PENDING = 0;
const RUNNING = 1;
const DONE = 2;

const iso = (ms: number): string => new Date(ms).toISOString();

class StepError extends Error {
  constructor(readonly failure: Classified, readonly extra: { candidates?: unknown[]; userMessage?: string } = {}) {
    super(failure.message);
  }
}

function describeThrown(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs one execution segment to its end and returns the result; never throws for run-time failures. */
export async function execute<O>(core: Core, x: Execution): Promise<RunResult<O>> {
  const { chain, runId, traceId } = x;
  const { now, events } = core;
  const plan = chain.plan;
  const n = plan.length;
  const segmentStart = now();
  const deadlineAt = segmentStart + chain.timeoutMs;
  const controller = new AbortController();
  const signal = controller.signal;
  core.active.add(controller);
  const timer = setTimeout(() => controller.abort(new RunAbortReason('deadline', `Chain ${chain.name} passed its ${chain.timeoutMs} ms deadline.`)), chain.timeoutMs);
  const onCallerAbort = (): void => controller.abort(new RunAbortReason('cancelled', 'The caller cancelled the run.'));
  if (x.signal?.aborted) onCallerAbort();
  else x.signal?.addEventListener('abort', onCallerAbort);

  const results = x.results;
  const scope: Scope = { input: x.input, context: x.context, results };
  const state = new Uint8Array(n);
  const traceSteps: (TraceStep | undefined)[] = new Array(n);
  const indexOf = new Map(plan.map((p) => [p.id, p.index]));
  for (const id of x.done) state[indexOf.get(id)!] = DONE;
  for (const t of x.priorTrace) traceSteps[t.stepNumber - 1] = t;
  const sessionKey = x.sessionId ?? runId;
  const log = core.logger;
  const logBase = log ? { runId, traceId, chain: chain.name } : undefined;

  if (listening(events, 'chain:start')) {
    safeEmit(events, 'chain:start', { runId, traceId, chain: chain.name, ...(x.sessionId !== undefined && { sessionId: x.sessionId }), resumed: x.resumed });
  }
  log?.info({ ...logBase, resumed: x.resumed }, `chain ${chain.name} ${x.resumed ? 'resumed' : 'started'}`);

  let stop: Stop | undefined;
  let lastToolIndex = -1;

  if (!x.resumed) {
    for (const pre of chain.preconditions) {
      let ok: boolean;
      try {
        ok = pre.check(scope) === true;
      } catch (error) {
        stop = { index: -1, outcome: { kind: 'failed', error: toErrorInfo({ category: 'internal', code: 'precondition_error', message: `A precondition threw: ${describeThrown(error)}` }, {}, core.retryTable) } };
        break;
      }
      if (!ok) {
        stop = { index: -1, outcome: { kind: 'failed', error: toErrorInfo({ category: 'invalid_input', code: 'precondition_failed', message: `Precondition failed: ${pre.message}` }, { userMessage: pre.message }, core.retryTable) } };
        break;
      }
    }
  }

  const runStep = async (p: PlannedStep): Promise<StepOutcome> => {
    const started = now();
    const entry: TraceStep = { stepNumber: p.index + 1, id: p.id, status: 'success', attempts: 0, latencyMs: 0, startedAt: iso(started) };
    if (p.tool) entry.tool = p.tool.name;
    traceSteps[p.index] = entry;
    if (listening(events, 'step:start')) {
      safeEmit(events, 'step:start', { runId, traceId, chain: chain.name, step: p.id, ...(p.tool && { tool: p.tool.name }), stepNumber: p.index + 1 });
    }
    let outcome: StepOutcome;
    let ctx: CallContext | undefined;
    try {
      outcome = await stepBody(p, entry, (c) => (ctx = c));
    } catch (error) {
      const failure = error instanceof StepError ? error.failure : classifyError(error, core.classifiers);
      const extra = error instanceof StepError ? error.extra : {};
      outcome = {
        kind: 'failed',
        error: toErrorInfo(failure, { step: p.id, ...(p.tool && { tool: p.tool.name }), attempts: ctx?.attempt ?? entry.attempts, ...extra }, ctx?.retry ?? core.retryTable),
      };
    }
    const ended = now();
    entry.latencyMs = ended - started;
    if (ctx) entry.attempts = ctx.attempt;
    switch (outcome.kind) {
      case 'ok': entry.status = outcome.skipped ? 'skipped' : 'success'; break;
      case 'failed': entry.status = 'error'; entry.error = outcome.error; break;
      case 'gate': entry.status = 'awaiting_confirmation'; break;
      case 'declined': entry.status = 'declined'; break;
    }
    if (core.traceDetail === 'full' && outcome.kind === 'ok' && !outcome.skipped) entry.output = redact(outcome.value, core.redact);
    if (p.tool && ctx) {
      lastToolIndex = Math.max(lastToolIndex, p.index);
      const transition = core.transitions.record(sessionKey, p.tool.name, started, ended, outcome.kind === 'ok');
      if (transition && listening(events, 'tool:transition')) safeEmit(events, 'tool:transition', transition);
    }
    if (listening(events, 'step:end')) {
      safeEmit(events, 'step:end', {
        runId, traceId, chain: chain.name, step: p.id, ...(p.tool && { tool: p.tool.name }),
        status: entry.status, attempts: entry.attempts, latencyMs: entry.latencyMs, ...(entry.error && { error: entry.error }),
      });
    }
    if (log) {
      if (outcome.kind === 'ok') log.debug({ ...logBase, step: p.id, input: entry.input ?? undefined, output: redact(outcome.value, core.redact) }, `step ${p.id} ${entry.status}`);
      else if (outcome.kind === 'failed' && outcome.error.category === 'timeout') log.warn({ ...logBase, step: p.id, code: outcome.error.code }, `step ${p.id} timed out`);
    }
    return outcome;
  };

  const stepBody = async (p: PlannedStep, entry: TraceStep, exposeCtx: (c: CallContext) => void): Promise<StepOutcome> => {
    const step = p.step;
    if (step.when) {
      let go: boolean;
      try {
        go = step.when(scope) !== false;
      } catch (error) {
        throw new StepError({ category: 'internal', code: 'when_failed', message: `Step ${p.id}: \`when\` threw: ${describeThrown(error)}` });
      }
      if (!go) return { kind: 'ok', value: undefined, skipped: true };
    }
    if (p.kind === 'compute') {
      const s = step as ComputeStep;
      let value: unknown;
      try {
        value = s.compute(scope);
        if (value instanceof Promise) value = await value;
      } catch (error) {
        throw new StepError({ category: 'internal', code: 'compute_failed', message: `Step ${p.id}: compute threw: ${describeThrown(error)}` });
      }
      if (s.output) {
        const parsed = s.output.safeParse(value);
        if (!parsed.success) throw new StepError(schemaFailure('invalid_output', `Step ${p.id} computed a value that does not match its output schema`, parsed.error.issues));
        value = parsed.data;
      }
      return { kind: 'ok', value, skipped: false };
    }
    if (p.kind === 'select') return select(p, step as SelectStep);

    const tool = p.tool!;
    const s = step as ToolStep;
    let raw: unknown;
    try {
      raw = p.resolveInput!(scope);
    } catch (error) {
      throw new StepError({ category: 'internal', code: 'input_failed', message: `Step ${p.id}: building the input threw: ${describeThrown(error)}` });
    }
    const parsed = tool.input.safeParse(raw);
    if (!parsed.success) throw new StepError(schemaFailure('invalid_step_input', `Input for tool ${tool.name} (step ${p.id}) does not match its schema`, parsed.error.issues));
    if (core.traceDetail === 'full') entry.input = redact(parsed.data, core.redact);

    if (s.confirm && x.approvedGate !== p.id) {
      let prompt: string;
      let details: unknown;
      try {
        prompt = typeof s.confirm.prompt === 'function' ? s.confirm.prompt(scope) : s.confirm.prompt;
        details = s.confirm.details?.(scope);
      } catch (error) {
        throw new StepError({ category: 'internal', code: 'confirm_failed', message: `Step ${p.id}: building the confirmation threw: ${describeThrown(error)}` });
      }
      if (!x.confirm) return { kind: 'gate', prompt, details };
      const request: ConfirmationRequest = { step: p.id, tool: tool.name, prompt, expiresAt: iso(deadlineAt) };
      if (details !== undefined) request.details = details;
      if (!(await untilAborted(Promise.resolve(x.confirm(request)), signal))) return { kind: 'declined' };
    }

    const ctx: CallContext = {
      tool,
      input: parsed.data,
      runId,
      traceId,
      chain: chain.name,
      step: p.id,
      context: x.context,
      signal,
      deadlineAt,
      retry: core.retryFor(tool, s.retry),
      attempt: 0,
      timeoutMs: s.timeoutMs ?? tool.timeoutMs,
      ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
      ...(tool.effect !== 'read' && { idempotencyKey: s.idempotencyKey ? s.idempotencyKey(scope) : `${runId}:${p.id}` }),
    };
    exposeCtx(ctx);
    return { kind: 'ok', value: await core.call(ctx), skipped: false };
  };

  const select = (p: PlannedStep, step: SelectStep): StepOutcome => {
    const { from, expect } = step.select;
    const items = from.resolve(scope);
    if (!Array.isArray(items)) {
      throw new StepError({ category: 'validation', code: 'not_an_array', message: `Step ${p.id}: ${from} is not an array.` });
    }
    const matches = items.filter(p.matcher!(scope));
    if (matches.length === 0) {
      throw new StepError({ category: 'not_found', code: 'no_match', message: `Step ${p.id}: none of the ${items.length} item(s) in ${from} matched.` });
    }
    if (expect === 'one' && matches.length > 1) {
      throw new StepError(
        { category: 'ambiguous', code: 'ambiguous', message: `Step ${p.id}: ${matches.length} items in ${from} matched; expected one.` },
        { candidates: matches, userMessage: `${matches.length} items match. Which one did you mean?` },
      );
    }
    return { kind: 'ok', value: expect === 'all' ? matches : matches[0], skipped: false };
  };

  await new Promise<void>((resolve) => {
    let running = 0;
    const pump = (): void => {
      if (!stop) {
        for (let i = 0; i < n; i++) {
          if (state[i] !== PENDING) continue;
          const deps = plan[i]!.deps;
          let ready = true;
          for (let d = 0; d < deps.length; d++) if (state[deps[d]!] !== DONE) { ready = false; break; }
          if (!ready) continue;
          state[i] = RUNNING;
          running++;
          const p = plan[i]!;
          runStep(p).then((outcome) => settle(p, outcome));
        }
      }
      if (running === 0) resolve();
    };
    const settle = (p: PlannedStep, outcome: StepOutcome): void => {
      running--;
      if (outcome.kind === 'ok') {
        state[p.index] = DONE;
        if (!outcome.skipped) results[p.id] = outcome.value;
      } else if (!stop || (outcome.kind === 'failed' && stop.outcome.kind === 'gate')) {
        // A failure outranks a pending gate: a run that failed is not checkpointed.
        stop = { index: p.index, outcome };
        if (outcome.kind !== 'gate' && running > 0 && !signal.aborted) {
          controller.abort(new RunAbortReason('cancelled', `Stopped because step ${p.id} ${outcome.kind === 'failed' ? 'failed' : 'was declined'}.`));
        }
      }
      pump();
    };
    if (stop) resolve();
    else pump();
  });

  clearTimeout(timer);
  x.signal?.removeEventListener('abort', onCallerAbort);
  core.active.delete(controller);

  const ended = now();
  const trace: Trace = {
    traceId,
    runId,
    chain: chain.name,
    ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
    startedAt: iso(x.startedAt),
    endedAt: iso(ended),
    totalLatencyMs: ended - x.startedAt,
    status: 'completed',
    steps: traceSteps.filter((t): t is TraceStep => t !== undefined),
  };
  const lastTool = lastToolIndex >= 0 ? plan[lastToolIndex]!.tool : undefined;
  const base = {
    runId,
    chain: chain.name,
    trace,
    metadata: buildMetadata({ chain, ...(lastTool && { lastTool }), actualDurationMs: ended - segmentStart, tools: core.tools }),
  };

  let result: RunResult<O>;
  const outcome = stop?.outcome;
  if (!outcome) {
    let output: unknown;
    try {
      output = chain.output ? chain.output(scope) : lastResult(plan, state, results);
      result = { status: 'completed', output: output as O, ...base };
    } catch (error) {
      const info = toErrorInfo({ category: 'internal', code: 'output_failed', message: `Chain ${chain.name}: \`output\` threw: ${describeThrown(error)}` }, {}, core.retryTable);
      result = { status: 'failed', error: info, completed: { ...results }, compensated: [], ...base };
    }
  } else if (outcome.kind === 'failed') {
    result = { status: 'failed', error: outcome.error, completed: { ...results }, compensated: [], ...base };
  } else if (outcome.kind === 'declined') {
    result = { status: 'declined', step: plan[stop!.index]!.id, ...base };
  } else {
    result = await checkpoint(core, x, plan[stop!.index]!, outcome, trace, state, base);
  }
  trace.status = result.status;

  if (listening(events, 'chain:end')) {
    safeEmit(events, 'chain:end', {
      runId, traceId, chain: chain.name, ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
      status: result.status, durationMs: trace.totalLatencyMs, ...(result.status === 'failed' && { error: result.error }), trace,
    });
  }
  if (log) {
    if (result.status === 'failed') log.error({ ...logBase, step: result.error.step, category: result.error.category, code: result.error.code }, `chain ${chain.name} failed: ${result.error.message}`);
    else log.info({ ...logBase, status: result.status, durationMs: trace.totalLatencyMs }, `chain ${chain.name} ${result.status}`);
  }
  return result;
}

function lastResult(plan: readonly PlannedStep[], state: Uint8Array, results: Record<string, unknown>): unknown {
  for (let i = plan.length - 1; i >= 0; i--) {
    const id = plan[i]!.id;
    if (state[i] === DONE && id in results) return results[id];
  }
  return undefined;
}

/** Stores the checkpoint of a run stopped at a gate and returns `awaiting_confirmation`. */
async function checkpoint<O>(
  core: Core,
  x: Execution,
  p: PlannedStep,
  gate: { prompt: string; details: unknown },
  trace: Trace,
  state: Uint8Array,
  base: Omit<RunResult, 'status'> & Record<string, unknown>,
): Promise<RunResult<O>> {
  const createdAt = core.now();
  const expiresAt = createdAt + core.confirmationTtlMs;
  const id = nanoid();
  const done = x.chain.plan.filter((s) => state[s.index] === DONE).map((s) => s.id);
  try {
    await core.checkpoints.save({
      v: 1,
      id,
      runId: x.runId,
      traceId: x.traceId,
      chain: x.chain.name,
      fingerprint: x.chain.fingerprint,
      ...(x.sessionId !== undefined && { sessionId: x.sessionId }),
      input: x.input,
      contextHash: hashContext(x.context),
      results: x.results,
      done,
      gate: p.id,
      startedAt: x.startedAt,
      createdAt,
      expiresAt,
      trace: trace.steps.filter((t) => t.id !== p.id),
    });
  } catch (error) {
    const info = toErrorInfo({ category: 'unavailable', code: 'store_unavailable', message: `Could not store the checkpoint: ${describeThrown(error)}` }, { step: p.id, tool: p.tool!.name }, core.retryTable);
    return { status: 'failed', error: info, completed: { ...x.results }, compensated: [], ...base } as RunResult<O>;
  }
  const confirmation: ConfirmationRequest = { step: p.id, tool: p.tool!.name, prompt: gate.prompt, expiresAt: iso(expiresAt) };
  if (gate.details !== undefined) confirmation.details = gate.details;
  if (listening(core.events, 'confirmation:requested')) {
    safeEmit(core.events, 'confirmation:requested', { runId: x.runId, traceId: x.traceId, chain: x.chain.name, step: p.id, tool: p.tool!.name, prompt: gate.prompt, expiresAt: confirmation.expiresAt });
  }
  return { status: 'awaiting_confirmation', resumeToken: signToken(id, expiresAt, core.secret), confirmation, ...base } as RunResult<O>;
}

/** Resolves with the promise, or rejects with the signal's reason if it aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => { signal.removeEventListener('abort', onAbort); resolve(v); },
      (e) => { signal.removeEventListener('abort', onAbort); reject(e); },
    );
  });
}
