// One tool call through the policies of docs/guides/policies.md: each policy wraps the next, the invoker is innermost.
import { classifyError, DEFAULT_CLASSIFIERS } from '../errors/classify.js';
import { inBandFailure, isInBandError } from '../errors/in-band.js';
import { ToolFailure, type Classified, type Classifier } from '../errors/failure.js';
import type { Tool } from '../define/tool.js';
import { formatPath } from '../define/path.js';
import type { AbortScope } from '../policies/abort.js';
import type { InvokeWrapper, ToolCall, ToolInvoker } from '../invokers/types.js';
import type { Call, CallContext, Policy } from '../policies/types.js';
import { parseSchema } from '../define/schema.js';

/** Composes policies outside-in: `compose([a, b], end)` is `a(b(end))`. */
export function compose(policies: readonly Policy[], end: Call): Call {
  return policies.reduceRight<Call>((next, policy) => policy(next), end);
}

/**
 * The innermost step: calls the invoker, turns in-band error results into failures and checks the
 * output against the tool's schema (a mismatch is a `validation` failure naming the path). A tool's
 * own `classifiers` go before `classifiers` (the runner's, then the built-in ones).
 */
export function invokeTool(
  invoker: ToolInvoker,
  classifiers: readonly Classifier[] = DEFAULT_CLASSIFIERS,
  wrap?: InvokeWrapper,
  progress: ProgressReport = NO_PROGRESS,
): Call {
  // Per tool, made once: only tools that bring classifiers pay for the lookup (on failures only).
  const withTools = new WeakMap<Tool, readonly Classifier[]>();
  const classifiersOf = (tool: Tool): readonly Classifier[] => {
    if (tool.classifiers === undefined) return classifiers;
    let list = withTools.get(tool);
    if (list === undefined) withTools.set(tool, (list = [...tool.classifiers, ...classifiers]));
    return list;
  };
  // The original error rides along as `cause` (docs/ARCHITECTURE.md, One call), for ChainErrorInfo.cause and logs.
  const failWith = (list: readonly Classifier[], error: unknown): never => {
    throw new ToolFailure(classifyError(error, list), error instanceof ToolFailure ? error.cause : error);
  };
  const fail = (error: unknown): never => failWith(classifiers, error);
  // Bound to the call (not closures per call: a bound function keeps no context while the tool runs).
  function failed(this: CallContext, error: unknown): never {
    return failWith(classifiersOf(this.tool), error);
  }
  function checkOutput(this: CallContext, output: unknown): unknown {
    if (isInBandError(output)) throw new ToolFailure(inBandFailure(output, classifiersOf(this.tool)));
    const parsed = parseSchema(this.tool.output, output);
    if (parsed.success) return parsed.data;
    throw new ToolFailure(
      schemaFailure(
        'invalid_output',
        `Tool ${this.tool.name} returned output that does not match its schema`,
        parsed.error.issues,
      ),
    );
  }
  return (ctx) => {
    let pending: Promise<unknown>;
    ctx.reached = true;
    try {
      const call = new AttemptCall(ctx, ctx.attemptScope ?? ctx.run, progress);
      // One branch when unused: no wrapper, no extra frame or allocation.
      pending = Promise.resolve(wrap === undefined ? invoker(call) : wrap(invoker, call, ctx.step));
    } catch (error) {
      // an invoker that throws synchronously: rejected once handled (no unhandled-rejection bookkeeping)
      pending = Promise.resolve(error).then(rethrow);
    }
    return pending.then(checkOutput.bind(ctx), ctx.tool.classifiers === undefined ? fail : failed.bind(ctx));
  };
}

/** The `call.progress` of a call: the shared no-op when its run records no events, else one that records them. */
export type ProgressReport = (ctx: CallContext) => (data: unknown) => void;
const IGNORE = (): void => undefined;
const NO_PROGRESS: ProgressReport = () => IGNORE;

/**
 * The {@link ToolCall} handed to invokers. `signal` is an own enumerable getter, so the AbortController
 * behind it is only made if the tool reads it, and spreading the call (`{ ...call }`) still carries it;
 * `progress` is a plain field, the shared no-op unless the run records events.
 * A class sharing one getter, since an object literal would define its getter again for every attempt.
 */
class AttemptCall {
  declare tool: string;
  declare input: unknown;
  declare attempt: number;
  declare signal: AbortSignal;
  declare runId: string;
  declare traceId: string;
  declare context: Readonly<Record<string, unknown>>;
  declare idempotencyKey?: string;
  declare sessionId?: string;
  declare progress: (data: unknown) => void;
  readonly #scope: AbortScope;
  static readonly #signal: PropertyDescriptor = {
    get(this: AttemptCall): AbortSignal {
      return this.#scope.signal;
    },
    enumerable: true,
    configurable: true,
  };

  constructor(ctx: CallContext, scope: AbortScope, report: ProgressReport) {
    this.#scope = scope;
    // Assigned in the order the call's keys were always listed (tool, input, attempt, signal, …).
    this.tool = ctx.tool.name;
    this.input = ctx.input;
    this.attempt = ctx.attempt;
    Object.defineProperty(this, 'signal', AttemptCall.#signal);
    this.runId = ctx.runId;
    this.traceId = ctx.traceId;
    this.context = ctx.context;
    if (ctx.idempotencyKey !== undefined) this.idempotencyKey = ctx.idempotencyKey;
    if (ctx.sessionId !== undefined) this.sessionId = ctx.sessionId;
    this.progress = report(ctx);
  }
}

function rethrow(error: unknown): never {
  throw error;
}

/** A `validation`-style failure from zod issues, naming the first offending path. */
export function schemaFailure(
  code: string,
  what: string,
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  category: Classified['category'] = 'validation',
): Classified {
  const first = issues[0];
  const where =
    first && first.path.length
      ? ` at '${formatPath(first.path.map((p) => (typeof p === 'number' ? p : String(p))))}'`
      : '';
  return {
    category,
    code,
    message:
      `${what}${where}: ${first?.message ?? 'invalid'}` +
      `${issues.length > 1 ? ` (and ${issues.length - 1} more issue${issues.length > 2 ? 's' : ''})` : ''}.`,
  };
}
