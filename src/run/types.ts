// Options of runs, resumes and invokes. The results they return are in observe/result.ts, the
// logger in observe/logger.ts.
import type { Chain, ChainOutput } from '../define/chain.js';
import type { TierLevel } from '../guidance/intent.js';
import type { ConfirmationRequest, RunResult } from '../observe/result.js';

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
   * The chain to resume, or the only chains it may be one of (matched by name; a token of another
   * chain is refused, `unknown_chain`); default: the runner's chain of the checkpoint's name.
   */
  chain?: Chain | readonly Chain[];
  signal?: AbortSignal;
}

/**
 * A decision on a run parked at a confirmation gate, made by someone other than the token holder
 * (`runner.decide`): `approved` as in `resume`, `by` who decided (recorded in the run and its trace).
 */
export interface GateDecision {
  /** `true` continues the run as `resume` would; `false` ends it `declined`. */
  approved: boolean;
  /** Who decided (an operator id such as `'ops:alice'`): non-empty text, kept in the trace. */
  by: string;
}

/**
 * A decision on a run parked `in_doubt` (a plain write's outcome unknown after a crash or a lost
 * lease, API.md §10), made by a person who checked the downstream system.
 */
export interface RetryDecision {
  /**
   * `true`: the write did not happen; call it once more (same idempotency key) and continue.
   * `false`: end the run `failed`/`outcome_unknown`, undoing the steps completed before it.
   */
  retry: boolean;
  /**
   * Who decided (an operator id such as `'ops:alice'`): non-empty
   * text, kept in the run's journal and `getRun(runId).decidedBy`.
   */
  by: string;
}

/** What `runner.decide` accepts: a gate's decision, or the decision on a run in doubt. */
export type RunDecision = GateDecision | RetryDecision;

/**
 * What `runner.decide` answers: the result of the decided run (a run continued after approval, a
 * declined one, or a refusal such as `already_used` when a `resume` or another decision won),
 * `'not_found'` for a run id the run store does not know, `'not_parked'` for a run not waiting for
 * a decision (running or ended).
 */
export type DecideResult<O = unknown> = RunResult<O> | 'not_found' | 'not_parked';

/**
 * The options argument of `run` for a chain whose context input type is `CIn`: optional when the
 * chain declares no context schema, required with its `context` when it does.
 *
 * @example
 * ```ts
 * type A = RunOptionsArgs<{ userId: string }>;
 * // [options: RunOptions<{ userId: string }> & { context: { userId: string } }]
 * ```
 */
export type RunOptionsArgs<CIn> = undefined extends CIn
  ? [options?: RunOptions<CIn>]
  : [options: RunOptions<CIn> & { context: CIn }];

/**
 * The output type of a resumed run, given what was passed as `chain` (one chain or several).
 *
 * @example
 * ```ts
 * type O = ResumedOutput<typeof findAndDelete>; // { task_id: string; title: string; deleted: true }
 * ```
 */
export type ResumedOutput<Ch> = Ch extends readonly (infer X)[] ? ChainOutput<X> : ChainOutput<Ch>;

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
  tier?: TierLevel;
}
