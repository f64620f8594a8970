// What one finished tool call teaches: transition, call counters, duration, failures per session.
import type { ChainErrorInfo } from '../errors/categories.js';
import { listening, safeEmit } from '../observe/events.js';
import type { ToolTransition } from '../observe/trace.js';
import type { Core } from '../run/types.js';

/**
 * Feeds what one finished tool call teaches: its transition from the session's previous call (if
 * any), counters, duration (successes only), failures. `session` is the run id for runs without one.
 */
export function learn(core: Core, session: string, transition: ToolTransition | undefined, tool: string, mode: 'chain' | 'direct', started: number, ended: number, error: ChainErrorInfo | undefined, complexity: number): void {
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
}
