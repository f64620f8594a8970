// What one finished tool call teaches: transition, call counters, duration, failures per session.
import type { ChainErrorInfo } from '../errors/categories.js';
import { listening, safeEmit } from '../observe/events.js';
import type { ToolTransition } from '../observe/trace.js';
import type { Core } from '../run/types.js';

/**
 * Feeds what one finished tool call teaches: its transition from the session's previous call (if
 * any), counters, duration (successes only), failures. `session` is the run id for runs without one.
 * A failure that earns fallback advice logs it at `warn` (with `runId` when given).
 */
export function learn(core: Core, session: string, transition: ToolTransition | undefined, tool: string, mode: 'chain' | 'direct', started: number, ended: number, error: ChainErrorInfo | undefined, complexity: number, runId?: string): void {
  const ok = error === undefined;
  if (transition) {
    core.metrics.recordTransition(transition);
    core.learning?.transition(transition);
    if (listening(core.events, 'tool:transition')) safeEmit(core.events, 'tool:transition', transition);
  }
  core.metrics.recordCall(tool, mode, ok, ended - started);
  if (ok) {
    core.timing.record(tool, ended - started, complexity);
    core.learning?.sample(tool, ended - started, complexity);
  }
  core.advisor.record(session, tool, error?.category);
  if (error && core.logger) logAdvice(core, session, tool, error, runId);
}

// Failure path only, and only with a logger: what the agent is told to do instead, for operators.
function logAdvice(core: Core, session: string, tool: string, error: ChainErrorInfo, runId: string | undefined): void {
  const advice = core.advisor.advice(session, tool);
  if (advice.length === 0) return;
  try {
    core.logger!.warn(
      { ...(runId !== undefined && { runId }), sessionId: session, tool, ...(error.step !== undefined && error.step !== tool && { step: error.step }), category: error.category, code: error.code, advice },
      `fallback advice for ${tool}: ${advice.join(' ')}`,
    );
  } catch {
    // a broken logger must not break the call that failed
  }
}
