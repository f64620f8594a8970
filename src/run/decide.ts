// Steering a run parked at a gate by run id, from any instance: a decision made by someone other
// than the token holder (`runner.decide`), and a cancel (`runner.cancel`). Both go through the
// checkpoint's atomic take, as `resume` does: whichever takes it first acts, the others are refused.
// A run parked in doubt is decided with `{ retry, by }` through the run store's own atomic take.
import { RunAbortReason } from '../errors/failure.js';
import type { RunResult } from '../observe/result.js';
import { callStore } from '../stores/guard.js';
import type { RunStore, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import type { Durable } from './durable.js';
import { checkRunId } from './run-id.js';
import type { RunnerParts } from './parts.js';
import { prepareResume } from './prepare.js';
import type { DecideResult, GateDecision, RunDecision } from './types.js';

/** What steering a parked run needs: the runner's parts, its durable side and its run store. */
export interface ParkedRuns {
  parts: RunnerParts;
  durable: Durable;
  store: RunStore;
}

/**
 * Checks a decision before anything is asked of a store; throws a `TypeError` for a malformed one.
 *
 * @example
 * ```ts
 * checkDecision(runId, { approved: true, by: 'ops:alice' });
 * ```
 */
export function checkDecision(runId: unknown, decision: RunDecision): void {
  checkRunId(runId);
  const d = decision as { approved?: unknown; retry?: unknown } | undefined;
  const gate = typeof d?.approved === 'boolean';
  const retry = typeof d?.retry === 'boolean';
  if (gate === retry)
    throw new TypeError(
      'Expected a decision { approved: boolean, by: string } (a gate) ' +
        'or { retry: boolean, by: string } (a run in doubt).',
    );
  if (typeof decision.by !== 'string' || decision.by === '' || decision.by.length > 255)
    throw new TypeError('Expected `by`: who decided, as 1 to 255 characters.');
}

/** A gate's decision (`approved`), not a retry decision (`retry`); checked by {@link checkDecision} already. */
const isGateDecision = (decision: RunDecision): decision is GateDecision =>
  typeof (decision as { approved?: unknown }).approved === 'boolean';

/** The stored run, bounded like every run-store read. */
async function readRun({ parts, store }: ParkedRuns, runId: string): Promise<StoredRun | undefined> {
  const { now } = parts.calls;
  return callStore(() => store.get(runId), now() + STORE_WAIT_MS, now, 'run (get)');
}

/** The resume token a parked run recorded with its result, if it is parked. */
function parkedToken(run: StoredRun): string | undefined {
  if (run.status !== 'awaiting_confirmation') return undefined;
  const token = (run.result as { resumeToken?: unknown } | undefined)?.resumeToken;
  return typeof token === 'string' ? token : undefined;
}

/**
 * Decides the gate of a parked run by its id: the same checks and atomic take as `resume`, with
 * the run's recorded context; approved, the run goes on durably; declined, it ends `declined`.
 *
 * @example
 * ```ts
 * const r = await decideRun({ parts, durable, store }, runId, { approved: true, by: 'ops:alice' });
 * ```
 */
export async function decideRun(steer: ParkedRuns, runId: string, decision: RunDecision): Promise<DecideResult> {
  const run = await readRun(steer, runId);
  if (!run) return 'not_found';
  if (!isGateDecision(decision)) {
    if (run.status === 'awaiting_confirmation')
      throw new TypeError(`Run ${runId} waits at a confirmation gate: decide it with { approved, by }.`);
    return run.status === 'in_doubt'
      ? steer.durable.settleDoubt(run, { retry: decision.retry, by: decision.by })
      : 'not_parked';
  }
  if (run.status === 'in_doubt')
    throw new TypeError(`Run ${runId} is in doubt (a write's outcome is unknown): decide it with { retry, by }.`);
  const token = parkedToken(run);
  if (token === undefined) return 'not_parked';
  const { parts, durable } = steer;
  const prepared = await prepareResume(
    parts,
    token,
    { approved: decision.approved, by: decision.by },
    { context: run.context as Record<string, unknown> },
  );
  if (!('status' in prepared)) return durable.resume(prepared);
  return prepared.status === 'declined' ? durable.endParked(prepared) : prepared;
}

/**
 * Cancels a parked run: takes its checkpoint (its token is refused from then on), then ends it
 * `failed`/`run_cancelled`, undoing its completed steps with `compensate`. `true` when it did;
 * otherwise the refusal's code (`already_used` when a resume or a decision took the checkpoint
 * first: the run is then in flight or ended; `expired`, …), or `false` for a run not parked at a gate.
 *
 * @example
 * ```ts
 * if ((await cancelParked(steer, run, 'the user left')) === true) return 'cancelled';
 * ```
 */
export async function cancelParked(
  steer: ParkedRuns,
  run: StoredRun,
  reason: string | undefined,
): Promise<boolean | string> {
  const token = parkedToken(run);
  if (token === undefined) return false;
  const stop = new AbortController();
  // Aborted before the run continues: no step starts, and what it completed is compensated.
  stop.abort(new RunAbortReason('cancelled', `The run was cancelled${reason ? `: ${reason}` : ''}.`, 'run_cancelled'));
  const prepared = await prepareResume(
    steer.parts,
    token,
    { approved: true },
    { context: run.context as Record<string, unknown>, signal: stop.signal },
  );
  if ('status' in prepared) return prepared.status === 'failed' ? prepared.error.code : false;
  // The approved gate is not asked again, and nothing past it starts: the abort stops the run first.
  const result: RunResult = await steer.durable.resume(prepared);
  return result.status === 'failed';
}
