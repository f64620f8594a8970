// chainkit/otel: OpenTelemetry spans for runs and steps, built from the runner's events.
import { context, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Hooks, StepEndEvent, StepStartEvent } from '../observe/events.js';

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

interface OpenRun {
  span: Span;
  /** Step spans in flight, by step id. */
  steps: Map<string, Span>;
}

/**
 * Hooks that turn each run into an OpenTelemetry span (`chain <name>`, a child of the span active
 * when `run`/`resume` was called) with a child span per step (`step <id>`, or `tool <name>` for
 * `runner.invoke`). Attributes: chain, step, tool, attempt, error category and code, cached; each
 * retry is a `retry` span event; failures are recorded as exceptions with an error status.
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

  const parentOf = (runId: string) => {
    const run = runs.get(runId);
    return run ? trace.setSpan(context.active(), run.span) : context.active();
  };
  const startStep = (e: StepStartEvent | StepEndEvent): Span => {
    const attributes: Attributes = { [OTEL_ATTRIBUTES.runId]: e.runId, [OTEL_ATTRIBUTES.step]: e.step };
    if (e.chain !== undefined) attributes[OTEL_ATTRIBUTES.chain] = e.chain;
    if (e.tool !== undefined) attributes[OTEL_ATTRIBUTES.tool] = e.tool;
    return tracer.startSpan(e.chain === undefined ? `tool ${e.step}` : `step ${e.step}`, { attributes }, parentOf(e.runId));
  };
  const stepKey = (runId: string, step: string): string => `${runId}\u0000${step}`;
  // Steps of `invoke` have no run span; they are kept here by run id + step id.
  const loose = new Map<string, Span>();

  return {
    onChainStart(e) {
      const attributes: Attributes = { [OTEL_ATTRIBUTES.chain]: e.chain, [OTEL_ATTRIBUTES.runId]: e.runId, [OTEL_ATTRIBUTES.traceId]: e.traceId, [OTEL_ATTRIBUTES.resumed]: e.resumed };
      if (e.sessionId !== undefined) attributes[OTEL_ATTRIBUTES.sessionId] = e.sessionId;
      runs.set(e.runId, { span: tracer.startSpan(`chain ${e.chain}`, { attributes }), steps: new Map() });
    },
    onStepStart(e) {
      const span = startStep(e);
      const run = runs.get(e.runId);
      if (run) run.steps.set(e.step, span);
      else loose.set(stepKey(e.runId, e.step), span);
    },
    onStepRetry(e) {
      const span = e.step === undefined ? undefined : (runs.get(e.runId)?.steps.get(e.step) ?? loose.get(stepKey(e.runId, e.step)));
      span?.addEvent('retry', {
        [OTEL_ATTRIBUTES.attempt]: e.attempt, [OTEL_ATTRIBUTES.delayMs]: e.delayMs, [OTEL_ATTRIBUTES.category]: e.category, [OTEL_ATTRIBUTES.code]: e.code, 'exception.message': e.message,
      });
    },
    onStepEnd(e) {
      const run = runs.get(e.runId);
      const key = stepKey(e.runId, e.step);
      // A step that never started (skipped after a failure, or a compensation) gets a span of its own.
      const span = (run ? run.steps.get(e.step) : loose.get(key)) ?? startStep(e);
      if (run) run.steps.delete(e.step);
      else loose.delete(key);
      span.setAttributes({ [OTEL_ATTRIBUTES.status]: e.status, [OTEL_ATTRIBUTES.attempt]: e.attempts, [OTEL_ATTRIBUTES.cached]: e.status === 'cached' });
      if (e.error) recordError(span, e.error);
      span.end();
    },
    onChainEnd(e) {
      const run = runs.get(e.runId);
      runs.delete(e.runId);
      // A run refused before it started (bad input, bad token) still gets its span.
      const span = run?.span ?? tracer.startSpan(`chain ${e.chain}`, { attributes: { [OTEL_ATTRIBUTES.chain]: e.chain, [OTEL_ATTRIBUTES.runId]: e.runId, [OTEL_ATTRIBUTES.traceId]: e.traceId } });
      for (const step of run?.steps.values() ?? []) step.end();
      span.setAttribute(OTEL_ATTRIBUTES.status, e.status);
      if (e.error) recordError(span, e.error);
      span.end();
    },
  };
}

function recordError(span: Span, error: ChainErrorInfo): void {
  span.setAttributes({ [OTEL_ATTRIBUTES.category]: error.category, [OTEL_ATTRIBUTES.code]: error.code });
  span.recordException({ name: error.category, message: error.message, code: error.code });
  span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
}
