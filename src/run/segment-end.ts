// How a segment ends: the result of a run whose steps are over — its output, its failure (after
// compensating what was done), a decline, or the run parked at a gate — with its trace and metadata.
import type { PlannedStep } from '../define/step-kinds.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { toErrorInfo } from '../errors/messages.js';
import type { RunResult } from '../observe/result.js';
import { settleTrace, type TraceStep } from '../observe/trace.js';
import { compensateRun, type UndoUnit } from './compensate.js';
import { describeThrown, toolsRun, type Execution, type Stopped } from './execution.js';
import { parkAtGate } from './gate.js';
import { newTrace } from './trace-entry.js';
import type { StepHost } from './step-host.js';

/** A segment whose steps are over, as its result sees it. */
export interface EndedSegment extends StepHost {
  /** What stopped the run (a step's index, -1 before any step), if anything did. */
  readonly stopped: { index: number; outcome: Stopped } | undefined;
  /** Epoch ms the run first started (kept across a resume). */
  readonly startedAt: number;
  /** When the segment's clock started (its metadata's actual duration counts from it). */
  readonly segmentStart: number;
  /** The session advice is kept under: the session id, or the run id. */
  readonly sessionKey: string;
  /** The trace entries so far: earlier segments', then this one's, in plan order. */
  traceEntries(): TraceStep[];
  /** The last tool step (in plan order) that called its tool. */
  lastTool(): string | undefined;
  /** Whether a step is done (completed or skipped). */
  isDone(step: PlannedStep): boolean;
  /** The ids of the steps done, in plan order. */
  doneIds(): string[];
  /**
   * What a failure would undo, oldest first: in plan order, each step's sub-chain steps (those of
   * its chain, items or iterations that completed) then the step itself, if done with `compensate`.
   */
  undoUnits(): UndoUnit[];
}

/**
 * The result of a segment whose steps are over (its `status` also set on the trace).
 *
 * @example
 * ```ts
 * const result = await segmentResult(run); // a completed run's at once, a stopped run's as a promise
 * ```
 */
export function segmentResult(
  run: EndedSegment,
  stop: EndedSegment['stopped'] = run.stopped,
): RunResult | Promise<RunResult> {
  const { calls, recorder, exec } = run;
  const { chain } = exec;
  const ended = calls.now();
  const trace = newTrace(run, exec.startedAt, ended, 'completed', run.traceEntries());
  const lastTool = run.lastTool();
  const actualDurationMs = ended - run.segmentStart;
  const sessionTools = exec.sessionId !== undefined ? recorder.sessionTools(exec.sessionId) : toolsRun(trace.steps);
  const metadata = recorder.metadata(
    lastTool
      ? { chain, lastTool, actualDurationMs, sessionTools, advice: recorder.advice(run.sessionKey, lastTool) }
      : { chain, actualDurationMs, sessionTools, advice: [] },
  );
  if (!stop) {
    // The common end, one literal (every result of a run in flight is made here): no shared base copied in.
    let output: unknown;
    try {
      output = chain.output ? chain.output(run.scope) : lastResult(run);
    } catch (error) {
      // The steps are done and their effects stand: the run fails, and undoes them as any failure does.
      return stoppedResult(run, outputFailed(run, error), trace, metadata);
    }
    const result: RunResult = { status: 'completed', output, runId: exec.runId, chain: chain.name, trace, metadata };
    settleTrace(trace, 'completed', undefined);
    return result;
  }
  return stoppedResult(run, stop, trace, metadata);
}

/**
 * The stop of a segment whose chain's `output` threw once its steps were done: an `internal` failure
 * (`output_failed`), named by the chain's step in its parent when it is a sub-chain.
 *
 * @example
 * ```ts
 * return stoppedResult(run, outputFailed(run, error), trace, metadata);
 * ```
 */
export function outputFailed(run: EndedSegment, error: unknown): NonNullable<EndedSegment['stopped']> {
  const { exec, calls } = run;
  const info = toErrorInfo(
    {
      category: 'internal',
      code: 'output_failed',
      message: `Chain ${exec.chain.name}: \`output\` threw: ${describeThrown(error)}`,
    },
    exec.nested ? { step: exec.nested.prefix } : {},
    calls.retryTable,
  );
  return { index: -1, outcome: { kind: 'failed', error: info } };
}

/**
 * The result of a segment a step stopped (a failure, after compensating; a decline; a wait; a gate):
 * asynchronous, unlike the common end, which is made at once (no async frame for every run).
 */
async function stoppedResult(
  run: EndedSegment,
  stop: NonNullable<EndedSegment['stopped']>,
  trace: RunResult['trace'],
  metadata: RunResult['metadata'],
): Promise<RunResult> {
  const { calls, recorder, exec } = run;
  const { chain } = exec;
  const { plan } = chain;
  const base = { runId: exec.runId, chain: chain.name, trace, metadata };
  const failed = (error: ChainErrorInfo): RunResult => ({
    status: 'failed',
    error,
    completed: { ...exec.results },
    compensated: [],
    ...base,
  });

  /** A failed run undoes what it completed (newest first), but for what an earlier owner undid already. */
  const compensate = async (result: Extract<RunResult, { status: 'failed' }>): Promise<void> => {
    const undone = exec.compensating ? priorUndos(result, exec.compensating) : undefined;
    // A durable run that stopped without ending is finished by its next owner: nothing is undone here.
    const undo = exec.interrupted?.()
      ? []
      : run
          .undoUnits()
          .filter((unit) => !undone?.has(unit.id))
          .reverse();
    await compensateRun(calls, recorder, run, undo, result, run.abort.reason, exec.undoJournal);
  };

  let result: RunResult;
  if (stop.outcome.kind === 'failed') {
    const failure = failed(stop.outcome.error) as Extract<RunResult, { status: 'failed' }>;
    // What a failed sub-chain or item undid itself came first.
    const { undone } = stop.outcome;
    if (undone !== undefined) {
      failure.compensated.push(...undone.compensated);
      if (undone.compensationFailures) failure.compensationFailures = [...undone.compensationFailures];
    }
    await compensate(failure);
    result = failure;
  } else if (stop.outcome.kind === 'declined') {
    result = { status: 'declined', step: stop.outcome.at ?? plan[stop.index]!.id, ...base };
  } else if (stop.outcome.kind === 'wait') {
    // A durable run parks (run/durable.ts records it `waiting`): what finished beside this step is journaled already.
    const { until, signal, at } = stop.outcome;
    result = {
      status: 'waiting',
      waiting: {
        step: at ?? run.stepKey(plan[stop.index]!),
        ...(until !== undefined && { until }),
        ...(signal !== undefined && { signal }),
      },
      ...base,
    };
  } else {
    result = await parkAtGate(run, run.doneIds(), plan[stop.index]!, stop.outcome, base, failed);
    // No checkpoint (the store failed, or cannot keep a value): no token, the run failed — undo what it did.
    if (result.status === 'failed') await compensate(result);
  }
  settleTrace(trace, result.status, result.status === 'failed' ? result.error : undefined);
  return result;
}

/**
 * A recovered run's undos done before, into the result (compensated, failures, trace): what its failed
 * sub-chains had undone themselves when it began to compensate, then its own undos, whose step ids it returns.
 */
function priorUndos(
  result: Extract<RunResult, { status: 'failed' }>,
  { undone, reported }: NonNullable<Execution['compensating']>,
): Set<string> {
  const ids = new Set<string>();
  const failures: { step: string; error: ChainErrorInfo }[] = [...(reported?.compensationFailures ?? [])];
  if (reported) result.compensated.push(...reported.compensated);
  for (const e of undone) {
    ids.add(e.step);
    if (e.compensation === 'undo_failed') failures.push({ step: e.step, error: e.error as ChainErrorInfo });
    else result.compensated.push(e.step);
    if (e.trace) result.trace.steps.push(e.trace);
  }
  if (failures.length > 0) result.compensationFailures = failures;
  return ids;
}

/**
 * A chain without `output` returns its last completed step's result (a sub-chain's too).
 *
 * @example
 * ```ts
 * const output = chain.output ? chain.output(scope) : lastResult(run);
 * ```
 */
export function lastResult(run: EndedSegment): unknown {
  const { plan } = run.exec.chain;
  const { results } = run.exec;
  for (let i = plan.length - 1; i >= 0; i--) {
    const step = plan[i]!;
    if (run.isDone(step) && step.id in results) return results[step.id];
  }
  return undefined;
}
