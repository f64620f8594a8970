// Trace entries and traces, made when a step, a direct call, an undo or a run ends (nothing in flight
// holds trace state).
import type { Trace, TraceStep, TraceStepStatus } from '../observe/trace.js';
import type { CallSite } from './call-context.js';
import { iso } from './execution.js';

/** The ids events and logs carry: a run's, or a direct call's (no chain). */
export type RecordSite = Pick<CallSite, 'runId' | 'traceId' | 'sessionId' | 'chain'>;

/**
 * The trace entry of a step, a direct call or an undo, made when it ends (nothing in flight holds
 * trace state). One literal per shape: a field added afterwards would cost every entry a property array.
 *
 * @example
 * ```ts
 * const entry = traceEntry(1, 'find', 'list_tasks', 'success', 1, started, now());
 * ```
 */
export function traceEntry(
  stepNumber: number,
  id: string,
  tool: string | undefined,
  status: TraceStepStatus,
  attempts: number,
  started: number,
  ended: number,
): TraceStep {
  return tool !== undefined
    ? { stepNumber, id, tool, status, attempts, latencyMs: ended - started, startedAt: iso(started) }
    : { stepNumber, id, status, attempts, latencyMs: ended - started, startedAt: iso(started) };
}

/**
 * A run's (or a direct call's) trace.
 *
 * @example
 * ```ts
 * const trace = newTrace(site, startedAt, now(), 'completed', steps);
 * ```
 */
export function newTrace(
  site: RecordSite,
  startedAt: number,
  ended: number,
  status: Trace['status'],
  steps: TraceStep[],
): Trace {
  const trace: Trace = {
    traceId: site.traceId,
    runId: site.runId,
    chain: site.chain ?? '',
    startedAt: iso(startedAt),
    endedAt: iso(ended),
    totalLatencyMs: ended - startedAt,
    status,
    steps,
  };
  if (site.sessionId !== undefined) trace.sessionId = site.sessionId;
  return trace;
}

/**
 * When a step's trace entry says it ended (epoch ms), or `undefined` without one.
 *
 * @example
 * ```ts
 * const endedAt = traceEnd(unit.ran); // the write's step, from its trace entry
 * ```
 */
export function traceEnd(entry: TraceStep | undefined): number | undefined {
  if (entry === undefined) return undefined;
  const at = Date.parse(entry.startedAt) + entry.latencyMs;
  return Number.isFinite(at) ? at : undefined;
}
