// The one place a call's context is made — for a chain step, a direct `runner.invoke` and an undo
// after a failure — with one deadline rule, and the one place a failed call becomes a ChainErrorInfo.
import type { RetryRule, RetryTable, ChainErrorInfo } from '../errors/categories.js';
import type { Tool } from '../define/tool.js';
import { classifyError } from '../errors/classify.js';
import { keepCause, type Classifier } from '../errors/failure.js';
import { toErrorInfo, type FailureDetails } from '../errors/messages.js';
import { alternativesFor } from '../guidance/alternatives.js';
import type { GuidanceSources } from '../guidance/suggest.js';
import { inputSizeOf } from '../guidance/timing.js';
import type { RedactRule } from '../util/redact.js';
import type { AbortScope } from '../policies/abort.js';
import type { Call, CallContext } from '../policies/types.js';
import type { IdempotencyBeginOptions } from '../stores/types.js';
import { hashContext } from './checkpoint.js';
import { StepError } from './execution.js';

/** What making, running and explaining a call needs from the runner. */
export interface Calls {
  /** The call pipeline: policies around the invoker. */
  readonly call: Call;
  readonly now: () => number;
  /** The runner's retry table. */
  readonly retryTable: Readonly<RetryTable>;
  /** The retry table of a call to `tool` (with a step's override); cached. */
  retryFor(tool: Tool, stepRetry?: Partial<RetryRule> | false): Readonly<RetryTable>;
  readonly classifiers: readonly Classifier[];
  readonly redact: RedactRule | undefined;
  /** For the alternatives a failure suggests. */
  readonly guidance: GuidanceSources;
  /** Abort scopes of the runs and calls in flight, aborted by `close()`. */
  readonly active: Set<AbortScope>;
}

/** Where calls are made: a run (one site for all its steps), a direct `runner.invoke`, an undo. */
export interface CallSite {
  readonly runId: string;
  readonly traceId: string;
  readonly sessionId: string | undefined;
  /** The chain's name; `undefined` for a direct `runner.invoke`. */
  readonly chain: string | undefined;
  readonly context: Readonly<Record<string, unknown>>;
  /** Aborted at the deadline, on the caller's cancel and on `close()`. */
  readonly abort: AbortScope;
  /** The durable run and its owner, when the run is durable (its calls' idempotency claims name them). */
  readonly durable?: IdempotencyBeginOptions | undefined;
  /** Until when its calls may run: an epoch ms (the run's deadline, or the caller's), or a budget of their own. */
  readonly deadline: number | OwnDeadline;
}

/**
 * The deadline of a call that has no run's deadline to keep: {@link OWN_DEADLINE_TIMEOUTS} of its
 * tool's timeouts from `from` (room for the default retries), and at least `floorMs`.
 */
interface OwnDeadline {
  readonly floorMs: number;
  /** Epoch ms the call started. */
  readonly from: number;
}

/** How many of its tool's timeouts a call with its own deadline may take. */
const OWN_DEADLINE_TIMEOUTS = 3;
/** `runner.invoke` without `timeoutMs`: at least 30 s (InvokeOptions documents it). */
export const INVOKE_FLOOR_MS = 30_000;
/** An undo after a failure: the run's deadline may have passed, and an undo must still be tried. */
export const UNDO_FLOOR_MS = 1_000;

/** A chain step's overrides of its tool's retry rules and per-attempt timeout (a `ToolStep` is one). */
export interface CallTuning {
  readonly retry?: Partial<RetryRule> | false;
  readonly timeoutMs?: number;
}

/**
 * The context of one call of `tool` at `site`. `idempotencyKey` is the key given (by the step, the
 * caller or the undo); without one, a write gets the tool's `idempotencyKey(input)` or
 * `runId:step`, and a read gets none.
 *
 * @example
 * ```ts
 * const ctx = callContext(calls, site, 'update', updateTask, input, undefined);
 * const output = await calls.call(ctx);
 * ```
 */
export function callContext(
  calls: Calls,
  site: CallSite,
  step: string,
  tool: Tool,
  input: unknown,
  idempotencyKey: string | undefined,
  tuning?: CallTuning,
): CallContext {
  const deadline = site.deadline;
  const key = tool.effect === 'read' ? undefined : (idempotencyKey ?? defaultKey(site, step, tool, input));
  // Every field in the literal, even unset ones: fields added later cost each context a property array.
  return {
    tool,
    input,
    runId: site.runId,
    traceId: site.traceId,
    sessionId: site.sessionId,
    chain: site.chain,
    step,
    context: site.context,
    idempotencyKey: key,
    storeKey: key === undefined ? undefined : idempotencyStoreKey(tool.name, site.context, key),
    run: site.abort,
    deadlineAt:
      typeof deadline === 'number'
        ? deadline
        : deadline.from + Math.max(deadline.floorMs, OWN_DEADLINE_TIMEOUTS * tool.timeoutMs),
    retry: calls.retryFor(tool, tuning?.retry),
    attempt: 0,
    timeoutMs: tuning?.timeoutMs ?? tool.timeoutMs,
    cached: false,
    attemptScope: undefined,
    reached: false,
    lateAnswer: undefined,
    durable: site.durable,
    generation: 0,
    undoes: undefined,
  };
}

/**
 * The key the idempotency store keeps a call under (`CallContext.storeKey`): the call's key scoped
 * to its tool and its caller (a hash of the validated context). The same key from
 * another user, or for another tool, is another call: it never gets this one's result. Tool names
 * hold no `:`, and the hash is 64 hex digits, so two scopes never collide.
 *
 * @example
 * ```ts
 * idempotencyStoreKey('transfer', { userId: alice }, 'req-42'); // 'transfer:<sha-256 of the context>:req-42'
 * ```
 */
export function idempotencyStoreKey(tool: string, context: object, key: string): string {
  const storeKey = `${tool}:${hashContext(context)}:${key}`;
  // Joined texts are kept by V8 as a tree of pieces (~190 B here) until something flattens them, and
  // a store keeps this key for 24 h: reading a character flattens it now (~130 B, its pieces freed).
  storeKey.charCodeAt(0);
  return storeKey;
}

function defaultKey(site: CallSite, step: string, tool: Tool, input: unknown): string {
  if (!tool.idempotencyKey) return `${site.runId}:${step}`;
  return tool.idempotencyKey(input, {
    tool: tool.name,
    runId: site.runId,
    step,
    sessionId: site.sessionId,
    context: site.context,
  });
}

/**
 * A failed call or step as the ChainErrorInfo a result carries: classified (a {@link StepError}
 * already is), the original error kept as its non-enumerable `cause` (docs/ARCHITECTURE.md, One call), and with
 * `advise`, the alternatives guidance suggests. Not masked: each caller masks with the secrets it knows.
 *
 * @example
 * ```ts
 * const info = failureInfo(calls, error, { step: 'update', tool: 'update_task', attempts: ctx.attempt }, ctx, true);
 * ```
 */
export function failureInfo(
  calls: Calls,
  error: unknown,
  details: FailureDetails,
  ctx: CallContext | undefined,
  advise: boolean,
): ChainErrorInfo {
  const stepError = error instanceof StepError;
  const failure = stepError ? error.failure : classifyError(error, calls.classifiers);
  const info = toErrorInfo(
    failure,
    stepError ? { ...details, ...error.extra } : details,
    ctx?.retry ?? calls.retryTable,
  );
  if (!stepError) keepCause(info, error);
  // A call was made: say under which timeout, with how much input, at which attempt (numbers only).
  if (ctx && ctx.attempt > 0)
    info.context = { timeoutMs: ctx.timeoutMs, inputSize: inputSizeOf(ctx.input), attempt: ctx.attempt };
  if (advise) info.alternatives = alternativesFor(calls.guidance, info);
  return info;
}
