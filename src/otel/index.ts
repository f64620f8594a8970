/**
 * chainkit/otel: OpenTelemetry spans for runs and steps, built from the runner's events.
 *
 * @module chainkit/otel
 */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Exception,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Hooks, StepEndEvent, StepStartEvent } from '../observe/events.js';
import { secretMask, type SecretMask } from '../observe/redact.js';
import { describeValue } from '../util/redact.js';

/** Options of {@link otelHooks}. */
export interface OtelHooksOptions {
  /** The tracer to use. Default: `trace.getTracer('chainkit')` from the global provider. */
  tracer?: Tracer;
}

/**
 * Span attribute names, so dashboards and tests can rely on them.
 *
 * @example
 * ```ts
 * const failed = spans.filter((s) => s.attributes[OTEL_ATTRIBUTES.category] === 'timeout');
 * ```
 */
export const OTEL_ATTRIBUTES = {
  chain: 'chainkit.chain',
  runId: 'chainkit.run_id',
  traceId: 'chainkit.trace_id',
  sessionId: 'chainkit.session_id',
  resumed: 'chainkit.resumed',
  status: 'chainkit.status',
  step: 'chainkit.step',
  tool: 'chainkit.tool',
  attempt: 'chainkit.attempt',
  category: 'chainkit.error.category',
  code: 'chainkit.error.code',
  cached: 'chainkit.cached',
  delayMs: 'chainkit.retry.delay_ms',
} as const;

/**
 * OpenTelemetry GenAI semantic-convention attribute names and operation values used on the spans.
 *
 * @example
 * ```ts
 * const tools = spans.filter((s) => s.attributes[GENAI_ATTRIBUTES.operation] === 'execute_tool');
 * ```
 */
export const GENAI_ATTRIBUTES = {
  operation: 'gen_ai.operation.name',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  errorType: 'error.type',
} as const;

interface OpenRun {
  span: Span;
  /** Step spans in flight, by step id. */
  steps: Map<string, Span>;
}

/**
 * Hooks that trace each run with OpenTelemetry's GenAI conventions: a run span `invoke_workflow
 * {chain}` (a child of the span active when `run`/`resume` was called) with a child span per tool
 * call, `execute_tool {tool}` (`gen_ai.operation.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`
 * = `runId:step`, `error.type` = the failure's code); select and compute steps get `step {id}`.
 * The invoker runs inside its `execute_tool` span's context, so spans the tool starts (HTTP, DB)
 * are its children. What a tool throws is recorded as an exception (the original error); each
 * retry is a `retry` span event; chainkit's own attributes ({@link OTEL_ATTRIBUTES}) are extras.
 *
 * @example
 * ```ts
 * import { otelHooks } from 'chainkit/otel';
 * const runner = createRunner({ invoker, chains, hooks: otelHooks() });
 * ```
 */
export function otelHooks(options: OtelHooksOptions = {}): Hooks {
  const tracer = options.tracer ?? trace.getTracer('chainkit');
  // One entry per run in flight; removed at chain:end, so nothing outlives its run.
  const runs = new Map<string, OpenRun>();
  // Spans on which the tool's own error was recorded, so the step end does not add a second, summarised one.
  const recorded = new WeakSet<Span>();

  // A nested step (`audit/find`, `done/3/complete`, §12) is a child
  // of the closest open step span above it, else of the run's.
  const parentOf = (runId: string, step?: string) => {
    const run = runs.get(runId);
    if (!run) return context.active();
    for (let at = step?.lastIndexOf('/') ?? -1; at > 0; at = step!.lastIndexOf('/', at - 1)) {
      const above = run.steps.get(step!.slice(0, at));
      if (above) return trace.setSpan(context.active(), above);
    }
    return trace.setSpan(context.active(), run.span);
  };
  const startStep = (e: StepStartEvent | StepEndEvent): Span => {
    const attributes: Attributes = { [OTEL_ATTRIBUTES.runId]: e.runId, [OTEL_ATTRIBUTES.step]: e.step };
    if (e.chain !== undefined) attributes[OTEL_ATTRIBUTES.chain] = e.chain;
    if (e.tool === undefined) return tracer.startSpan(`step ${e.step}`, { attributes }, parentOf(e.runId, e.step));
    attributes[OTEL_ATTRIBUTES.tool] = e.tool;
    attributes[GENAI_ATTRIBUTES.operation] = 'execute_tool';
    attributes[GENAI_ATTRIBUTES.toolName] = e.tool;
    attributes[GENAI_ATTRIBUTES.toolCallId] = `${e.runId}:${e.step}`;
    return tracer.startSpan(
      `execute_tool ${e.tool}`,
      { kind: SpanKind.INTERNAL, attributes },
      parentOf(e.runId, e.step),
    );
  };
  const stepKey = (runId: string, step: string): string => `${runId}\u0000${step}`;
  // Steps of `invoke` have no run span; they are kept here by run id + step id.
  const loose = new Map<string, Span>();
  const spanOf = (runId: string, step: string | undefined): Span | undefined =>
    step === undefined ? undefined : (runs.get(runId)?.steps.get(step) ?? loose.get(stepKey(runId, step)));

  return {
    wrapInvoke(invoke, call, step) {
      const span = spanOf(call.runId, step);
      if (!span) return invoke(call);
      const pending = context.with(trace.setSpan(context.active(), span), invoke, undefined, call);
      return Promise.resolve(pending).then(undefined, (error: unknown) => {
        // The original error (type, message, stack), each failed attempt one exception event; secret
        // values of the call's input and context masked as everywhere else (docs/ARCHITECTURE.md, Secrets).
        span.recordException(asException(error, secretMask(undefined, call.input, call.context)));
        recorded.add(span);
        throw error;
      });
    },
    onChainStart(e) {
      const attributes: Attributes = {
        [GENAI_ATTRIBUTES.operation]: 'invoke_workflow',
        [OTEL_ATTRIBUTES.chain]: e.chain,
        [OTEL_ATTRIBUTES.runId]: e.runId,
        [OTEL_ATTRIBUTES.traceId]: e.traceId,
        [OTEL_ATTRIBUTES.resumed]: e.resumed,
      };
      if (e.sessionId !== undefined) attributes[OTEL_ATTRIBUTES.sessionId] = e.sessionId;
      runs.set(e.runId, {
        span: tracer.startSpan(`invoke_workflow ${e.chain}`, { kind: SpanKind.INTERNAL, attributes }),
        steps: new Map(),
      });
    },
    onStepStart(e) {
      const span = startStep(e);
      const run = runs.get(e.runId);
      if (run) run.steps.set(e.step, span);
      else loose.set(stepKey(e.runId, e.step), span);
    },
    onStepRetry(e) {
      spanOf(e.runId, e.step)?.addEvent('retry', {
        [OTEL_ATTRIBUTES.attempt]: e.attempt,
        [OTEL_ATTRIBUTES.delayMs]: e.delayMs,
        [OTEL_ATTRIBUTES.category]: e.category,
        [OTEL_ATTRIBUTES.code]: e.code,
        'exception.message': e.message,
      });
    },
    onStepEnd(e) {
      const run = runs.get(e.runId);
      const key = stepKey(e.runId, e.step);
      // A step that never started (skipped after a failure, or a compensation) gets a span of its own.
      const span = (run ? run.steps.get(e.step) : loose.get(key)) ?? startStep(e);
      if (run) run.steps.delete(e.step);
      else loose.delete(key);
      span.setAttributes({
        [OTEL_ATTRIBUTES.status]: e.status,
        [OTEL_ATTRIBUTES.attempt]: e.attempts,
        [OTEL_ATTRIBUTES.cached]: e.status === 'cached',
      });
      if (e.error) recordError(span, e.error, recorded.has(span));
      span.end();
    },
    onChainEnd(e) {
      const run = runs.get(e.runId);
      runs.delete(e.runId);
      // A run refused before it started (bad input, bad token) still gets its span.
      const span =
        run?.span ??
        tracer.startSpan(`invoke_workflow ${e.chain}`, {
          kind: SpanKind.INTERNAL,
          attributes: {
            [GENAI_ATTRIBUTES.operation]: 'invoke_workflow',
            [OTEL_ATTRIBUTES.chain]: e.chain,
            [OTEL_ATTRIBUTES.runId]: e.runId,
            [OTEL_ATTRIBUTES.traceId]: e.traceId,
          },
        });
      for (const step of run?.steps.values() ?? []) step.end();
      span.setAttribute(OTEL_ATTRIBUTES.status, e.status);
      if (e.error) recordError(span, e.error, false);
      span.end();
    },
  };
}

// OTel's Exception: name (or code) becomes exception.type; message and stack are masked copies.
function asException(error: unknown, mask: SecretMask): Exception {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: mask.text(error.message),
      ...(error.stack !== undefined && { stack: mask.text(error.stack) }),
      ...((typeof code === 'string' || typeof code === 'number') && { code }),
    };
  }
  return { name: typeof error, message: mask.text(describeValue(error)) };
}

function recordError(span: Span, error: ChainErrorInfo, alreadyRecorded: boolean): void {
  span.setAttributes({
    [GENAI_ATTRIBUTES.errorType]: error.code,
    [OTEL_ATTRIBUTES.category]: error.category,
    [OTEL_ATTRIBUTES.code]: error.code,
  });
  // The original error's type when there is one (its message is error.message, already masked), else the category.
  if (!alreadyRecorded)
    span.recordException({
      name: error.cause instanceof Error ? error.cause.name : error.category,
      message: error.message,
      ...(error.cause instanceof Error &&
        error.cause.stack !== undefined && { stack: maskStack(error.cause, error.message) }),
    });
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}

// The stack's frames under the (already masked) message: the raw first line may hold a secret.
function maskStack(error: Error, message: string): string {
  const stack = error.stack ?? '';
  const frames = stack.indexOf('\n    at ');
  return `${error.name}: ${message}${frames === -1 ? '' : stack.slice(frames)}`;
}
