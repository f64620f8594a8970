// One tool call through the policies of API.md §6: each policy wraps the next, the invoker is innermost.
import type { RetryTable } from '../errors/categories.js';
import { classifyError, inBandFailure, isInBandError, ToolFailure, type Classified, type Classifier } from '../errors/classify.js';
import type { Tool } from '../define/tool.js';
import { formatPath } from '../define/path.js';
import type { AbortScope } from './abort.js';
import { parseSchema } from '../define/schema.js';

/** One tool call as the invoker sees it. */
export interface ToolCall {
  tool: string;
  /** Already validated against the tool's input schema. */
  input: unknown;
  /** 1-based. */
  attempt: number;
  /** Aborted on timeout, deadline or caller cancel. */
  signal: AbortSignal;
  /** Set for write/destructive tools. */
  idempotencyKey?: string;
  runId: string;
  traceId: string;
  sessionId?: string;
  /** The trusted context. */
  context: Readonly<Record<string, unknown>>;
}

/** How tools are really called: any transport. */
export type ToolInvoker = (call: ToolCall) => Promise<unknown>;

/**
 * Runs around each attempt's invoker call (`hooks.wrapInvoke`): it must call `invoke(call)` once
 * and return (or await) its result. `step` is the step id (the tool name for `runner.invoke`).
 * Lets tracing run the tool inside its span's context, so spans the tool starts are its children.
 *
 * @example
 * ```ts
 * const wrapInvoke: InvokeWrapper = (invoke, call) => context.with(ctx, invoke, undefined, call);
 * ```
 */
export type InvokeWrapper = (invoke: ToolInvoker, call: ToolCall, step: string | undefined) => Promise<unknown>;

/** The state of one logical call (all its attempts), threaded through the policies. */
export interface CallContext {
  readonly tool: Tool;
  readonly input: unknown;
  readonly runId: string;
  readonly traceId: string;
  readonly sessionId?: string;
  readonly chain?: string;
  readonly step?: string;
  readonly context: Readonly<Record<string, unknown>>;
  readonly idempotencyKey?: string;
  /** The run's abort scope: aborted at the deadline, on caller cancel, or when the runner closes. */
  readonly run: AbortScope;
  /** Epoch ms after which nothing may be waited for. */
  readonly deadlineAt: number;
  /** Retry rules for this call. */
  readonly retry: Readonly<RetryTable>;
  /** Current attempt number (1-based); set by the retry policy. */
  attempt: number;
  /** Current per-attempt timeout; the retry policy doubles it after a timeout. */
  timeoutMs: number;
  /** Set by the idempotency policy when the result came from the store (or a duplicate in flight). */
  cached?: boolean;
  /** The current attempt's abort scope; set by the timeout policy. */
  attemptScope?: AbortScope;
  /** True once an attempt was handed to the invoker: from then on, an abort leaves the outcome unknown. */
  reached?: boolean;
}

/** One call, or one attempt of it. */
export type Call = (ctx: CallContext) => Promise<unknown>;

/** A policy wraps the rest of the pipeline. */
export type Policy = (next: Call) => Call;

/** Composes policies outside-in: `compose([a, b], end)` is `a(b(end))`. */
export function compose(policies: readonly Policy[], end: Call): Call {
  return policies.reduceRight<Call>((next, policy) => policy(next), end);
}

/**
 * The innermost step: calls the invoker, turns in-band error results into failures and checks the
 * output against the tool's schema (a mismatch is a `validation` failure naming the path).
 */
export function invokeTool(invoker: ToolInvoker, classifiers?: readonly Classifier[], wrap?: InvokeWrapper): Call {
  const fail = (error: unknown): never => {
    // The original error rides along as `cause` (API.md §9), for ChainErrorInfo.cause and logs.
    throw new ToolFailure(classifyError(error, classifiers), error instanceof ToolFailure ? error.cause : error);
  };
  // Bound to the call (not a closure per call: a bound function keeps no context while the tool runs).
  function checkOutput(this: CallContext, output: unknown): unknown {
    if (isInBandError(output)) throw new ToolFailure(inBandFailure(output, classifiers));
    const parsed = parseSchema(this.tool.output, output);
    if (parsed.success) return parsed.data;
    throw new ToolFailure(schemaFailure('invalid_output', `Tool ${this.tool.name} returned output that does not match its schema`, parsed.error.issues));
  }
  return (ctx) => {
    let pending: Promise<unknown>;
    ctx.reached = true;
    try {
      const call = toolCall(ctx, ctx.attemptScope ?? ctx.run);
      // One branch when unused: no wrapper, no extra frame or allocation.
      pending = Promise.resolve(wrap === undefined ? invoker(call) : wrap(invoker, call, ctx.step));
    } catch (error) {
      pending = Promise.reject(error); // an invoker that throws synchronously
    }
    return pending.then(checkOutput.bind(ctx), fail);
  };
}

/**
 * The {@link ToolCall} handed to invokers. `signal` is an own getter, so the AbortController behind
 * it is only made if the tool reads it, and spreading the call (`{ ...call }`) still carries it.
 */
function toolCall(ctx: CallContext, scope: AbortScope): ToolCall {
  const call: ToolCall = {
    tool: ctx.tool.name,
    input: ctx.input,
    attempt: ctx.attempt,
    get signal() {
      return scope.signal;
    },
    runId: ctx.runId,
    traceId: ctx.traceId,
    context: ctx.context,
  };
  if (ctx.idempotencyKey !== undefined) call.idempotencyKey = ctx.idempotencyKey;
  if (ctx.sessionId !== undefined) call.sessionId = ctx.sessionId;
  return call;
}

/** A `validation`-style failure from zod issues, naming the first offending path. */
export function schemaFailure(code: string, what: string, issues: readonly { path: readonly PropertyKey[]; message: string }[], category: Classified['category'] = 'validation'): Classified {
  const first = issues[0];
  const where = first && first.path.length ? ` at '${formatPath(first.path.map((p) => (typeof p === 'number' ? p : String(p))))}'` : '';
  return { category, code, message: `${what}${where}: ${first?.message ?? 'invalid'}${issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? 's' : ''})` : ''}.` };
}
