// The trace of one run: what ran, in which order, how long it took, and what failed.
import type { ChainErrorInfo } from '../errors/categories.js';

/** Status of one step in a trace. */
export type TraceStepStatus =
  'success' | 'error' | 'skipped' | 'cached' | 'awaiting_confirmation' | 'declined' | 'compensated' | 'waiting';

/** One step (or one `invoke` call) in a trace. */
export interface TraceStep {
  stepNumber: number;
  id: string;
  tool?: string;
  status: TraceStepStatus;
  attempts: number;
  latencyMs: number;
  startedAt: string;
  /** Only with `traceDetail: 'full'`, redacted. */
  input?: unknown;
  /** Only with `traceDetail: 'full'`, redacted. */
  output?: unknown;
  error?: ChainErrorInfo;
  /** Who decided this gated step through `runner.decide` (absent when the token holder resumed it). */
  decidedBy?: string;
  /**
   * Steps that run chains (`chain`, `branch`: the sub-chain's steps; `forEach`: one entry per item,
   * `loop`: one per iteration, each holding its sub-chain's steps). Nested ids carry the step's:
   * `audit/find`, `done/3`.
   */
  children?: TraceStep[];
}

/**
 * A trace's status: its run's, except that a run that completed some steps and then failed is
 * `partial` (the result's own status stays `failed`).
 */
export type TraceStatus =
  'completed' | 'partial' | 'awaiting_confirmation' | 'declined' | 'failed' | 'in_doubt' | 'waiting';

/** The whole trace of a run, a resume or an invoke. */
export interface Trace {
  traceId: string;
  runId: string;
  chain: string;
  sessionId?: string;
  startedAt: string;
  endedAt: string;
  totalLatencyMs: number;
  status: TraceStatus;
  steps: TraceStep[];
  /** Every error of the trace, in step order, then the run's own if no step holds it; absent when there is none. */
  errors?: ChainErrorInfo[];
  /**
   * The tool tier of an `invoke(…, { tier })`: the tier that offered the tool (or the one asked for, when none did).
   */
  tier?: string;
  /** How many tools that tier offers (simple 0 by default, medium its list, complex all). */
  toolCount?: number;
}

/** A move from one tool to the next within a session (for learning which tool follows which). */
export interface ToolTransition {
  fromTool: string;
  toTool: string;
  sessionId: string;
  success: boolean;
  timestamp: number;
  gapMs: number;
}

/**
 * Keys that name a person (user ids, emails, phone numbers): hidden in traces' inputs and outputs
 * unless the runner opts in with `traceIdentity: true`.
 *
 * @example
 * ```ts
 * IDENTITY_KEY.test('user_id'); // true
 * IDENTITY_KEY.test('task_id'); // false
 * ```
 */
export const IDENTITY_KEY = new RegExp(
  String.raw`^(?:(?:user|owner|account|customer|member)(?:[-_]?(?:id|name))?|` +
    String.raw`e[-_]?mail(?:[-_]?address)?|phone(?:[-_]?number)?)$`,
  'i',
);

/**
 * Sets a finished trace's status from its run's — `partial` for a failed run with completed
 * (or cached) steps — and lists its errors at the top level: the steps' errors, then the run's
 * own `error` when no step holds it.
 *
 * @example
 * ```ts
 * settleTrace(result.trace, result.status, result.status === 'failed' ? result.error : undefined);
 * ```
 */
export function settleTrace(trace: Trace, status: Exclude<TraceStatus, 'partial'>, error?: ChainErrorInfo): void {
  let errors: ChainErrorInfo[] | undefined;
  let done = false;
  for (const step of trace.steps) {
    if (step.status === 'success' || step.status === 'cached') done = true;
    if (step.error) (errors ??= []).push(step.error);
  }
  if (error && !errors?.includes(error)) (errors ??= []).push(error);
  trace.status = status === 'failed' && done ? 'partial' : status;
  if (errors) trace.errors = errors;
}
