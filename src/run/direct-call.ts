// `runner.invoke`: one tool called by name, outside any chain, through the same pipeline, recorder
// and learning as a chain step.
import type { Tool } from '../define/tool.js';
import { isTimerMs } from '../define/tool.js';
import { parseSchema } from '../define/schema.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { RunAbortReason } from '../errors/failure.js';
import { toErrorInfo } from '../errors/messages.js';
import type { ToolRegistry } from '../guidance/tiers.js';
import { complexityOf } from '../guidance/timing.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { InvokeResult, ResponseMetadata } from '../observe/result.js';
import { settleTrace } from '../observe/trace.js';
import { AbortScope, onSignalAbort } from '../policies/abort.js';
import type { CallContext } from '../policies/types.js';
import { describeThrown } from './execution.js';
import { newId } from './ids.js';
import { callContext, failureInfo, INVOKE_FLOOR_MS, type Calls, type CallSite } from './call-context.js';
import { schemaFailure } from './pipeline.js';
import type { Recorder } from './recorder.js';
import { newTrace, traceEntry } from './trace-entry.js';
import type { InvokeOptions } from './types.js';

/** What a direct call needs: calls, a recorder, the known tools and, for `tier`, the registry. */
export interface DirectCallParts {
  readonly calls: Calls;
  readonly recorder: Recorder;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly registry: ToolRegistry | undefined;
}

type Body<O> = { status: 'completed'; output: O } | { status: 'failed'; error: ChainErrorInfo };

/**
 * Calls one tool by name; never throws for run-time failures (only for bad options, or a `tier`
 * without a registry).
 *
 * @example
 * ```ts
 * const result = await callByName(parts, 'list_tasks', { user_id }, { sessionId });
 * ```
 */
export async function callByName<O>(
  parts: DirectCallParts,
  name: string,
  input: unknown,
  opts: InvokeOptions,
): Promise<InvokeResult<O>> {
  if (opts.timeoutMs !== undefined && !isTimerMs(opts.timeoutMs))
    throw new TypeError('Expected `timeoutMs` to be a positive number of ms below 2^31.');
  const { calls, recorder } = parts;
  const started = calls.now();
  const runId = newId();
  const traceId = newId();
  const { sessionId } = opts;
  const session = sessionId ?? runId;
  const tool = parts.tools.get(name);
  const metadataContext: ResponseMetadata['context'] = {};
  const abort = new AbortScope();
  const site: CallSite = {
    runId,
    traceId,
    sessionId,
    chain: undefined,
    context: opts.context ?? {},
    abort,
    deadline: opts.timeoutMs !== undefined ? started + opts.timeoutMs : { floorMs: INVOKE_FLOOR_MS, from: started },
  };
  let ctx: CallContext | undefined;
  let traceInput: unknown;

  const finish = (body: Body<O>): InvokeResult<O> => {
    const ended = calls.now();
    const entry = traceEntry(
      1,
      name,
      tool?.name,
      body.status === 'completed' ? (ctx?.cached ? 'cached' : 'success') : 'error',
      ctx?.attempt ?? 0,
      started,
      ended,
    );
    if (body.status === 'failed') {
      // Secrets of the input and context leave in no text (docs/ARCHITECTURE.md, Secrets); built on failure only.
      const mask = secretMask(recorder.redact, input, opts.context);
      entry.error = maskError(body.error, mask);
      if (traceInput !== undefined) entry.input = mask.data(traceInput);
    } else {
      if (traceInput !== undefined) entry.input = traceInput;
      if (recorder.traceDetail === 'full') entry.output = recorder.redacted(body.output);
    }
    if (ctx) {
      const transition =
        sessionId !== undefined
          ? recorder.transition(sessionId, name, started, ended, body.status === 'completed')
          : undefined;
      const error = body.status === 'failed' ? body.error : undefined;
      recorder.learn({
        tool: name,
        mode: 'direct',
        session,
        runId,
        transition,
        started,
        ended,
        error,
        complexity: complexityOf(ctx.input),
      });
    }
    const metadata = recorder.metadata({
      ...(tool && { tool }),
      ...(ctx && { lastTool: name }),
      actualDurationMs: ended - started,
      sessionTools: sessionId !== undefined ? recorder.sessionTools(sessionId) : ctx ? [name] : [],
      advice: ctx ? recorder.advice(session, name) : [],
      context: metadataContext,
    });
    if (sessionId === undefined) recorder.forget(session); // a one-call session is over
    if (ctx) recorder.stepEnded(site, entry); // only a call that was made ends a step
    const trace = newTrace(site, started, ended, body.status, [entry]);
    if (body.status === 'failed') settleTrace(trace, 'failed', entry.error);
    if (metadataContext.tier !== undefined) {
      trace.tier = metadataContext.tier;
      trace.toolCount = metadataContext.toolCount!;
    }
    return { ...body, tool: name, trace, metadata };
  };
  const failed = (category: ChainErrorInfo['category'], code: string, message: string) =>
    finish({ status: 'failed', error: toErrorInfo({ category, code, message }, { tool: name }, calls.retryTable) });

  if (opts.tier !== undefined) {
    if (!parts.registry) throw new TypeError('invoke(…, { tier }) needs createRunner({ registry }).');
    const found = parts.registry.tierFor(name, opts.tier); // throws DefinitionError for an unknown level
    // The tier offered (its tool count goes into the metadata and the trace): the one found, else the one asked for.
    metadataContext.tier = found ?? opts.tier;
    metadataContext.toolCount = parts.registry.forComplexity(found ?? opts.tier).length;
    if (!found) return failed('not_found', 'not_in_tier', `Tool '${name}' is in no tier from '${opts.tier}' up.`);
    if (found !== opts.tier) {
      metadataContext.wasEscalated = true;
      metadataContext.originalTier = opts.tier;
      recorder.tierEscalated(runId, name, opts.tier, found);
    }
  }
  if (!tool)
    return failed(
      'not_found',
      'unknown_tool',
      `No tool named '${name}' is known to this runner (known: ${[...parts.tools.keys()].join(', ') || 'none'}).`,
    );
  let parsed: ReturnType<typeof parseSchema>;
  try {
    parsed = parseSchema(tool.input, input);
  } catch (error) {
    // A throwing getter or a hostile Proxy as input: a result, never a throw.
    return failed(
      'invalid_input',
      'unreadable_input',
      `The input of tool ${name} could not be read: ${describeThrown(error)}`,
    );
  }
  if (!parsed.success) {
    return finish({
      status: 'failed',
      error: toErrorInfo(
        schemaFailure(
          'invalid_input',
          `Input for tool ${name} does not match its schema`,
          parsed.error.issues,
          'invalid_input',
        ),
        { tool: name },
        calls.retryTable,
      ),
    });
  }
  if (recorder.traceDetail === 'full') traceInput = recorder.redacted(parsed.data);
  try {
    ctx = callContext(calls, site, name, tool, parsed.data, opts.idempotencyKey);
  } catch (error) {
    // A context it cannot read (a throwing getter: a write's key is scoped by the context's hash), or a
    // tool's idempotencyKey function that throws: a result, never a throw, before anything is called.
    return failed(
      'invalid_input',
      'unreadable_input',
      `The call to tool ${name} could not be prepared: ${describeThrown(error)}`,
    );
  }
  calls.active.add(abort);
  const offCallerAbort =
    opts.signal &&
    onSignalAbort(opts.signal, () => abort.abort(new RunAbortReason('cancelled', 'The caller cancelled the call.')));
  recorder.stepStarted(site, name, name, 1);
  try {
    return finish({ status: 'completed', output: (await calls.call(ctx)) as O });
  } catch (error) {
    return finish({
      status: 'failed',
      error: failureInfo(calls, error, { tool: name, step: name, attempts: ctx.attempt }, ctx, true),
    });
  } finally {
    offCallerAbort?.();
    calls.active.delete(abort);
  }
}
