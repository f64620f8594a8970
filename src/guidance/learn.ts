// What one finished tool call teaches: transition, call counters, duration, failures per session.
import type { ChainErrorInfo } from '../errors/categories.js';
import type { Logger } from '../observe/logger.js';
import type { ToolTransition } from '../observe/trace.js';
import type { FallbackAdvisor } from './fallback.js';
import type { MetricsCollector } from './metrics.js';
import type { LearningSync } from './persist.js';
import type { TimingModel } from './timing.js';

/** Where what a call teaches goes: the runner's collectors, and the learning store when there is one. */
export interface Learners {
  readonly metrics: MetricsCollector;
  readonly timing: TimingModel;
  readonly advisor: FallbackAdvisor;
  /** Persists what is learned, when a learning store is configured. */
  readonly learning: LearningSync | undefined;
  /** For fallback advice after a failure. */
  readonly logger: Logger | undefined;
}

/** One finished tool call, as learning sees it. */
export interface CallLesson {
  readonly tool: string;
  /** A chain step or a direct `runner.invoke`. */
  readonly mode: 'chain' | 'direct';
  /** The session, or the run id for a run without one. */
  readonly session: string;
  readonly runId: string | undefined;
  /** From the session's previous call, if any. */
  readonly transition: ToolTransition | undefined;
  readonly started: number;
  readonly ended: number;
  /** The failure; `undefined` when the call succeeded. */
  readonly error: ChainErrorInfo | undefined;
  /** How big the input was (see `complexityOf`): durations are learned per complexity. */
  readonly complexity: number;
}

/**
 * Feeds what one finished tool call teaches: its transition from the session's previous call (if
 * any), counters, duration (successes only), failures. A failure that earns fallback advice is
 * counted in the metrics (`adviceStats()`) and logged at `warn` (with `runId` when given).
 *
 * @example
 * ```ts
 * learn(learners, {
 *   tool: 'list_tasks', mode: 'direct', session, runId,
 *   transition: undefined, started, ended, error: undefined, complexity: 1,
 * });
 * ```
 */
export function learn(to: Learners, call: CallLesson): void {
  const { tool, transition, error } = call;
  const ok = error === undefined;
  const durationMs = call.ended - call.started;
  if (transition) {
    to.metrics.recordTransition(transition);
    to.learning?.transition(transition);
  }
  to.metrics.recordCall(tool, call.mode, ok, durationMs);
  if (ok) {
    to.timing.record(tool, durationMs, call.complexity);
    to.learning?.sample(tool, durationMs, call.complexity);
  }
  to.advisor.record(call.session, tool, error?.category);
  if (error) adviceGiven(to, call, error);
}

// Failure path only: a failure that earns fallback advice is counted, and logged for operators.
function adviceGiven(to: Learners, call: CallLesson, error: ChainErrorInfo): void {
  const { session, tool, runId } = call;
  const advice = to.advisor.advice(session, tool);
  if (advice.length === 0) return;
  to.metrics.recordAdvice(tool, error.category);
  if (!to.logger) return;
  try {
    to.logger.warn(
      {
        ...(runId !== undefined && { runId }),
        sessionId: session,
        tool,
        ...(error.step !== undefined && error.step !== tool && { step: error.step }),
        category: error.category,
        code: error.code,
        advice,
      },
      `fallback advice for ${tool}: ${advice.join(' ')}`,
    );
  } catch {
    // a broken logger must not break the call that failed
  }
}
