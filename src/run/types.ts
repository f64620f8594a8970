// Result and option types of runs, resumes and invokes.
import type { ChainErrorInfo, RetryRule, RetryTable } from '../errors/categories.js';
import type { Classifier } from '../errors/classify.js';
import type { FallbackAdvisor } from '../guidance/fallback.js';
import type { ResponseMetadata } from '../guidance/metadata.js';
import type { MetricsCollector } from '../guidance/metrics.js';
import type { GuidanceSources } from '../guidance/suggest.js';
import type { TimingModel } from '../guidance/timing.js';
import type { RunnerEmitter } from '../observe/events.js';
import type { RedactRule } from '../observe/redact.js';
import type { Trace } from '../observe/trace.js';
import type { TransitionTracker } from '../observe/transitions.js';
import type { CheckpointStore } from '../stores/types.js';
import type { Tool } from '../define/tool.js';
import type { AbortScope } from './abort.js';
import type { Call } from './pipeline.js';

/** What a confirmation gate asks. */
export interface ConfirmationRequest {
  step: string;
  tool: string;
  prompt: string;
  details?: unknown;
  expiresAt: string;
}

/** Fields every run result has. */
export interface RunResultBase {
  runId: string;
  chain: string;
  trace: Trace;
  metadata: ResponseMetadata;
}

/** The outcome of `run` and `resume`: a discriminated union on `status`. */
export type RunResult<O = unknown> = (
  | { status: 'completed'; output: O }
  | { status: 'awaiting_confirmation'; resumeToken: string; confirmation: ConfirmationRequest }
  | { status: 'declined'; step: string }
  | {
      status: 'failed';
      error: ChainErrorInfo;
      completed: Record<string, unknown>;
      /** Steps undone by their `compensate`, newest first. */
      compensated: string[];
      /** Undos that failed (or could not run): the side effects they leave need attention. */
      compensationFailures?: { step: string; error: ChainErrorInfo }[];
    }
) & RunResultBase;

/** The outcome of `invoke`. */
export type InvokeResult<O = unknown> = (
  | { status: 'completed'; output: O }
  | { status: 'failed'; error: ChainErrorInfo }
) & { tool: string; trace: Trace; metadata: ResponseMetadata };

/** Any pino-style logger: `logger.info(obj, msg)`. */
export interface Logger {
  /** Step inputs and outputs (redacted). */
  debug(obj: object, msg?: string): void;
  /** Chain start and end. */
  info(obj: object, msg?: string): void;
  /** Retries and timeouts. */
  warn(obj: object, msg?: string): void;
  /** Failed runs. */
  error(obj: object, msg?: string): void;
}

/** Options of `runner.run`. */
export interface RunOptions<C = Record<string, unknown>> {
  /** The trusted context (validated against the chain's context schema). */
  context?: C;
  sessionId?: string;
  /** Reuse a run id to make a retried request idempotent. */
  runId?: string;
  /** Cancels the run: in-flight calls are aborted, nothing more is scheduled. */
  signal?: AbortSignal;
  /** Answers confirmation gates in-process instead of returning a resume token. */
  confirm?: (request: ConfirmationRequest) => boolean | Promise<boolean>;
}

/** Options of `runner.resume`. */
export interface ResumeOptions<C = Record<string, unknown>> {
  /** Must be the same trusted context as the original run. */
  context?: C;
  /**
   * The chain to resume, or the chains it may be one of (matched by name); default: the runner's
   * chain of the checkpoint's name.
   */
  chain?: import('../define/chain.js').Chain | readonly import('../define/chain.js').Chain[];
  signal?: AbortSignal;
}

/**
 * The options argument of `run` for a chain whose context input type is `CIn`: optional when the
 * chain declares no context schema, required with its `context` when it does.
 *
 * @example
 * ```ts
 * type A = RunOptionsArgs<{ userId: string }>; // [options: RunOptions<{ userId: string }> & { context: { userId: string } }]
 * ```
 */
export type RunOptionsArgs<CIn> = undefined extends CIn ? [options?: RunOptions<CIn>] : [options: RunOptions<CIn> & { context: CIn }];

/**
 * The output type of a resumed run, given what was passed as `chain` (one chain or several).
 *
 * @example
 * ```ts
 * type O = ResumedOutput<typeof findAndDelete>; // { task_id: string; title: string; deleted: true }
 * ```
 */
export type ResumedOutput<Ch> = Ch extends readonly (infer X)[] ? import('../define/chain.js').ChainOutput<X> : import('../define/chain.js').ChainOutput<Ch>;

/** Options of `runner.invoke`. */
export interface InvokeOptions {
  context?: Record<string, unknown>;
  sessionId?: string;
  signal?: AbortSignal;
  /** Deadline for the call including retries (default: the tool's timeout × 3, at least 30 s). */
  timeoutMs?: number;
  /** Make the call idempotent under this key (write/destructive tools). */
  idempotencyKey?: string;
  /** Offer the tool at this tier; a tool found only in a higher tier escalates (needs `registry`). */
  tier?: import('../guidance/tiers.js').TierLevel;
}

/** @internal What the executor needs from the runner. */
export interface Core {
  readonly call: Call;
  readonly events: RunnerEmitter;
  readonly now: () => number;
  readonly retryTable: Readonly<RetryTable>;
  /** The retry table of a call to `tool` (with a step's override); cached. */
  retryFor(tool: Tool, stepRetry?: Partial<RetryRule> | false): Readonly<RetryTable>;
  readonly traceDetail: 'summary' | 'full';
  readonly redact?: RedactRule;
  readonly logger?: Logger;
  readonly checkpoints: CheckpointStore;
  readonly secret: string;
  readonly confirmationTtlMs: number;
  readonly transitions: TransitionTracker;
  readonly classifiers?: readonly Classifier[];
  readonly tools: ReadonlyMap<string, Tool>;
  /** What the runner learns: transitions and call counters, durations, failures per session. */
  readonly metrics: MetricsCollector;
  readonly timing: TimingModel;
  readonly advisor: FallbackAdvisor;
  /** Guidance's view of tools, chains, metrics and timing. */
  readonly guidance: GuidanceSources;
  /** Persists what is learned, when a learning store is configured. */
  readonly learning?: import('../guidance/persist.js').LearningSync;
  /** Tool tiers, for `invoke(…, { tier })`. */
  readonly registry?: import('../guidance/tiers.js').ToolRegistry;
  /** Abort scopes of the runs and calls in flight, aborted by `close()`. */
  readonly active: Set<AbortScope>;
}
