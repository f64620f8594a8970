// One tool call by name (`runner.invoke`): the same pipeline and learning as a chain step.
import type { ChainErrorInfo } from '../errors/categories.js';
import { classifyError, keepCause, RunAbortReason } from '../errors/classify.js';
import { toErrorInfo } from '../errors/messages.js';
import { alternativesFor } from '../guidance/alternatives.js';
import { buildMetadata, type ResponseMetadata } from '../guidance/metadata.js';
import { complexityOf } from '../guidance/timing.js';
import { listening, safeEmit } from '../observe/events.js';
import { maskError, redact, secretMask } from '../observe/redact.js';
import type { Trace, TraceStep } from '../observe/trace.js';
import { AbortScope, onSignalAbort } from './abort.js';
import { learn } from '../guidance/learn.js';
import { isTimerMs } from '../define/tool.js';
import { newId } from './ids.js';
import { schemaFailure, type CallContext } from './pipeline.js';
import type { Core, InvokeOptions, InvokeResult } from './types.js';
import { parseSchema } from '../define/schema.js';

const MIN_INVOKE_DEADLINE_MS = 30_000;

/** Calls one tool by name; never throws for run-time failures (only for a `tier` without a registry). */
export async function invokeOne<O>(core: Core, name: string, input: unknown, opts: InvokeOptions): Promise<InvokeResult<O>> {
  if (opts.timeoutMs !== undefined && !isTimerMs(opts.timeoutMs)) throw new TypeError('Expected `timeoutMs` to be a positive number of ms below 2^31.');
  const started = core.now();
  const runId = newId();
  const traceId = newId();
  const session = opts.sessionId ?? runId;
  const tool = core.tools.get(name);
  const entry: TraceStep = { stepNumber: 1, id: name, status: 'error', attempts: 0, latencyMs: 0, startedAt: new Date(started).toISOString() };
  const context: ResponseMetadata['context'] = {};
  let ctx: CallContext | undefined;
  const finish = (body: { status: 'completed'; output: O } | { status: 'failed'; error: ChainErrorInfo }): InvokeResult<O> => {
    const ended = core.now();
    entry.latencyMs = ended - started;
    entry.status = body.status === 'completed' ? (ctx?.cached ? 'cached' : 'success') : 'error';
    if (body.status === 'failed') {
      // Secrets of the input and context leave in no text (API.md §6); built on failure only.
      const mask = secretMask(core.redact, input, opts.context);
      entry.error = maskError(body.error, mask);
      if (entry.input !== undefined) entry.input = mask.data(entry.input);
    } else if (core.traceDetail === 'full') entry.output = redact(body.output, core.redact);
    if (ctx) {
      entry.attempts = ctx.attempt;
      const transition = opts.sessionId !== undefined ? core.transitions.record(opts.sessionId, name, started, ended, body.status === 'completed') : undefined;
      learn(core, session, transition, name, 'direct', started, ended, body.status === 'failed' ? body.error : undefined, complexityOf(ctx.input), runId);
    }
    const trace: Trace = {
      traceId, runId, chain: '', ...(opts.sessionId !== undefined && { sessionId: opts.sessionId }),
      startedAt: entry.startedAt, endedAt: new Date(ended).toISOString(), totalLatencyMs: ended - started,
      status: body.status, steps: [entry],
    };
    const metadata = buildMetadata(core.guidance, {
      ...(tool && { tool }), ...(ctx && { lastTool: name }), actualDurationMs: ended - started,
      sessionTools: opts.sessionId !== undefined ? core.transitions.recent(opts.sessionId) : ctx ? [name] : [],
      advice: ctx ? core.advisor.advice(session, name) : [], context,
    });
    if (opts.sessionId === undefined) core.advisor.forget(session); // a one-call session is over
    return { ...body, tool: name, trace, metadata };
  };
  const notFound = (code: string, message: string) => finish({ status: 'failed', error: toErrorInfo({ category: 'not_found', code, message }, { tool: name }, core.retryTable) });

  if (opts.tier !== undefined) {
    if (!core.registry) throw new TypeError('invoke(…, { tier }) needs createRunner({ registry }).');
    const found = core.registry.tierFor(name, opts.tier); // throws DefinitionError for an unknown level
    if (!found) return notFound('not_in_tier', `Tool '${name}' is in no tier from '${opts.tier}' up.`);
    context.tier = found;
    if (found !== opts.tier) {
      context.wasEscalated = true;
      context.originalTier = opts.tier;
      if (listening(core.events, 'tier:escalation')) safeEmit(core.events, 'tier:escalation', { tool: name, from: opts.tier, to: found });
      core.logger?.info({ runId, tool: name, from: opts.tier, to: found }, `tool ${name} escalated from tier ${opts.tier} to ${found}`);
    }
  }
  if (!tool) return notFound('unknown_tool', `No tool named '${name}' is known to this runner (known: ${[...core.tools.keys()].join(', ') || 'none'}).`);
  entry.tool = tool.name;
  let parsed: ReturnType<typeof parseSchema>;
  try {
    parsed = parseSchema(tool.input, input);
  } catch (error) {
    // A throwing getter or a hostile Proxy as input: a result, never a throw.
    return finish({ status: 'failed', error: toErrorInfo({ category: 'invalid_input', code: 'unreadable_input', message: `The input of tool ${name} could not be read: ${error instanceof Error ? error.message : String(error)}` }, { tool: name }, core.retryTable) });
  }
  if (!parsed.success) {
    return finish({ status: 'failed', error: toErrorInfo(schemaFailure('invalid_input', `Input for tool ${name} does not match its schema`, parsed.error.issues, 'invalid_input'), { tool: name }, core.retryTable) });
  }
  if (core.traceDetail === 'full') entry.input = redact(parsed.data, core.redact);
  const deadlineMs = opts.timeoutMs ?? Math.max(MIN_INVOKE_DEADLINE_MS, tool.timeoutMs * 3);
  const scope = new AbortScope();
  core.active.add(scope);
  const offCallerAbort = opts.signal && onSignalAbort(opts.signal, () => scope.abort(new RunAbortReason('cancelled', 'The caller cancelled the call.')));
  ctx = {
    tool, input: parsed.data, runId, traceId, context: opts.context ?? {}, run: scope,
    deadlineAt: started + deadlineMs, retry: core.retryFor(tool), attempt: 0, timeoutMs: tool.timeoutMs, step: name, reached: false,
    ...(opts.sessionId !== undefined && { sessionId: opts.sessionId }),
    ...(tool.effect !== 'read' && { idempotencyKey: opts.idempotencyKey ?? (tool.idempotencyKey ? tool.idempotencyKey(parsed.data, { tool: name, runId, step: name, ...(opts.sessionId !== undefined && { sessionId: opts.sessionId }), context: opts.context ?? {} }) : `${runId}:${name}`) }),
  };
  if (listening(core.events, 'step:start')) safeEmit(core.events, 'step:start', { runId, traceId, step: name, tool: name, stepNumber: 1 });
  let result: InvokeResult<O>;
  try {
    result = finish({ status: 'completed', output: (await core.call(ctx)) as O });
  } catch (error) {
    const info = toErrorInfo(classifyError(error, core.classifiers), { tool: name, step: name, attempts: ctx.attempt }, ctx.retry);
    keepCause(info, error); // the original error (API.md §9)
    info.alternatives = alternativesFor(core.guidance, info, { complexity: complexityOf(ctx.input) });
    result = finish({ status: 'failed', error: info });
  } finally {
    offCallerAbort?.();
    core.active.delete(scope);
  }
  if (listening(core.events, 'step:end')) {
    safeEmit(core.events, 'step:end', { runId, traceId, step: name, tool: name, status: entry.status, attempts: entry.attempts, latencyMs: entry.latencyMs, ...(entry.error && { error: entry.error }) });
  }
  return result;
}
