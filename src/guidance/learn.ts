// What one finished tool call teaches: transition, call counters, duration, failures per session.
import type { ChainErrorInfo } from '../errors/categories.js';
import { listening, safeEmit } from '../observe/events.js';
import type { Core } from '../run/types.js';

/** Feeds what one finished tool call teaches: transition, counters, duration (successes only), failures. */
export function learn(core: Core, session: string, tool: string, mode: 'chain' | 'direct', started: number, ended: number, error: ChainErrorInfo | undefined, complexity: number): void {
  const ok = error === undefined;
  const transition = core.transitions.record(session, tool, started, ended, ok);
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
