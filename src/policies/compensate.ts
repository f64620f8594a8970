// Compensation: when a later step fails, undo the completed steps that declare `compensate`, newest first.
import type { Scope } from '../define/ref.js';
import type { PlannedStep } from '../define/validate.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { classifyError, ToolFailure } from '../errors/classify.js';
import { toErrorInfo } from '../errors/messages.js';
import { listening, safeEmit } from '../observe/events.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { TraceStep } from '../observe/trace.js';
import { AbortScope } from '../run/abort.js';
import { schemaFailure, type CallContext } from '../run/pipeline.js';
import type { Core } from '../run/types.js';
import { parseSchema } from '../define/schema.js';

/** What compensation did: the steps undone, the undos that failed, and their trace entries. */
export interface CompensationOutcome {
  compensated: string[];
  failures: { step: string; error: ChainErrorInfo }[];
  trace: TraceStep[];
}

/** The run a compensation belongs to. */
export interface CompensationRun {
  chain: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  context: Readonly<Record<string, unknown>>;
  scope: Scope;
}

/**
 * Undoes `steps` in the order given (callers pass newest first), each through the same pipeline as
 * a step, with its own deadline — the run's may have passed, and an undo must still be attempted.
 * A failed undo is reported, never hidden, and does not stop the others.
 */
export async function compensate(core: Core, run: CompensationRun, steps: readonly PlannedStep[]): Promise<CompensationOutcome> {
  const outcome: CompensationOutcome = { compensated: [], failures: [], trace: [] };
  for (const p of steps) {
    const { tool, resolveInput } = p.compensate!;
    const started = core.now();
    const entry: TraceStep = { stepNumber: p.index + 1, id: p.id, tool: tool.name, status: 'compensated', attempts: 0, latencyMs: 0, startedAt: new Date(started).toISOString() };
    const scope = new AbortScope();
    core.active.add(scope);
    let ctx: CallContext | undefined;
    try {
      const parsed = parseSchema(tool.input, resolveInput(run.scope));
      if (!parsed.success) throw new ToolFailure(schemaFailure('invalid_step_input', `Compensation input for tool ${tool.name} (step ${p.id}) does not match its schema`, parsed.error.issues));
      ctx = {
        tool, input: parsed.data, runId: run.runId, traceId: run.traceId, chain: run.chain, step: p.id, context: run.context,
        run: scope, deadlineAt: started + Math.max(3 * tool.timeoutMs, 1000), retry: core.retryFor(tool), attempt: 0, timeoutMs: tool.timeoutMs,
        ...(run.sessionId !== undefined && { sessionId: run.sessionId }),
        ...(tool.effect !== 'read' && { idempotencyKey: `${run.runId}:${p.id}:compensate` }),
      };
      await core.call(ctx);
      outcome.compensated.push(p.id);
    } catch (error) {
      const failure = classifyError(error, core.classifiers);
      const info = toErrorInfo(failure, { step: p.id, tool: tool.name, attempts: ctx?.attempt ?? 0 }, ctx?.retry ?? core.retryTable);
      // Before the trace, the event and the log line see it: secrets leave in no text (API.md §6).
      maskError(info, secretMask(core.redact, ctx?.input, run.scope.input, run.context));
      entry.status = 'error';
      entry.error = info;
      outcome.failures.push({ step: p.id, error: info });
      core.logger?.error({ runId: run.runId, traceId: run.traceId, chain: run.chain, step: p.id, tool: tool.name, code: info.code }, `compensation of step ${p.id} failed: ${info.message}`);
    } finally {
      core.active.delete(scope);
    }
    entry.attempts = ctx?.attempt ?? 0;
    entry.latencyMs = core.now() - started;
    outcome.trace.push(entry);
    if (listening(core.events, 'step:end')) {
      safeEmit(core.events, 'step:end', {
        runId: run.runId, traceId: run.traceId, chain: run.chain, step: p.id, tool: tool.name,
        status: entry.status, attempts: entry.attempts, latencyMs: entry.latencyMs, ...(entry.error && { error: entry.error }),
      });
    }
  }
  return outcome;
}
