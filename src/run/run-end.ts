// How a run (not a sub-chain's) ends once its steps are over: its result (segment-end.ts), secrets
// masked out of a failure, its transition memory forgotten or parked, `onEnd` (durable runs record the
// result), then `chain:end` and the log line.
import { maskFailedRun, secretMask } from '../observe/redact.js';
import type { RunResult } from '../observe/result.js';
import type { LastCall } from '../observe/transitions.js';
import { describeThrown, type Execution } from './execution.js';
import { segmentResult, type EndedSegment } from './segment-end.js';
import { logFields, logRunEnd } from './run-log.js';

/** A run whose steps are over, as its end sees it. */
export interface EndingRun extends EndedSegment {
  /** The last call of a run without a session: its next transition (after a resume) counts from it. */
  readonly lastCall: LastCall | undefined;
  /** Detaches the run from the caller's `signal`. */
  readonly offCallerAbort: (() => void) | undefined;
}

/**
 * The run's result, its `chain:end` and log line. A completed run's is made at once (no async frame
 * for every run in flight); a stopped run's, or one with `onEnd`, comes as a promise. Never throws.
 *
 * @example
 * ```ts
 * protected finished(): void { this.resolve(concludeRun(this)); }
 * ```
 */
export function concludeRun(run: EndingRun): RunResult | Promise<RunResult> {
  run.offCallerAbort?.();
  run.exec.stop?.unlink(run.abort);
  run.calls.active.delete(run.abort);
  let result: RunResult | Promise<RunResult>;
  try {
    result = segmentResult(run);
    if (!(result instanceof Promise)) return concluded(run, result);
  } catch (error) {
    return Promise.reject(error);
  }
  return result.then((r) => concluded(run, r));
}

function concluded(run: EndingRun, result: RunResult): RunResult | Promise<RunResult> {
  const { calls, recorder, exec } = run;
  const mask = result.status === 'failed' ? secretMask(calls.redact, exec.input, exec.context) : undefined;
  if (mask) maskFailedRun(result as Extract<RunResult, { status: 'failed' }>, mask); // before events and logs
  if (exec.sessionId === undefined) {
    if (result.status !== 'awaiting_confirmation') recorder.forget(exec.runId);
    // Kept for the transition after the resume.
    else if (run.lastCall) recorder.transitions.park(exec.runId, run.lastCall);
  }
  if (exec.onEnd) return ended(run, exec.onEnd, result).then((r) => announced(run, r, mask));
  return announced(run, result, mask);
}

function announced(run: EndingRun, result: RunResult, mask: ReturnType<typeof secretMask> | undefined): RunResult {
  run.recorder.chainEnded(run, result);
  logRunEnd(run.recorder.logger, run, result, mask);
  return result;
}

/**
 * Hands the result to `onEnd` (durable runs record it), which may replace it; a failure there is logged,
 * the result stands.
 */
async function ended(run: EndingRun, onEnd: NonNullable<Execution['onEnd']>, result: RunResult): Promise<RunResult> {
  try {
    return (await onEnd(result)) ?? result;
  } catch (error) {
    run.recorder.logger?.error(
      logFields(run, { err: error }),
      `chain ${run.chain}: recording the result failed: ${describeThrown(error)}`,
    );
    return result;
  }
}
