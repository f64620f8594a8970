// Plain writes in doubt (API.md §6, §10): a run found with a plain write started and no outcome is
// parked `in_doubt`, never called again blindly, until a decision retries it or fails it — exactly once.
import type { Chain } from '../define/chain.js';
import { toErrorInfo } from '../errors/messages.js';
import type { InDoubtStep, RunResult } from '../observe/result.js';
import type { JournalEntry, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { priorTraceOf, type DurableOwner } from './durable-owner.js';
import { ownSegment } from './durable-segment.js';
import { earlyFailure, earlyResult } from './early-result.js';
import { continuation, writesInDoubt } from './journal.js';
import type { DecideResult, RetryDecision } from './types.js';

/**
 * A run found with a plain write started and no outcome journaled (its owner died or lost its lease
 * mid-call): the write may have taken effect, so it is not called again. The run is parked `in_doubt`
 * (no owner, no lease, never claimed again) until `runner.decide(runId, { retry, by })`.
 *
 * @example
 * ```ts
 * const doubt = writesInDoubt(run);
 * if (doubt.length > 0) return parkInDoubt(o, run, chain, doubt, run.owner);
 * ```
 */
export async function parkInDoubt(
  o: DurableOwner,
  run: StoredRun,
  chain: Chain,
  doubt: InDoubtStep[],
  previousOwner: string,
): Promise<RunResult> {
  const { runId } = run;
  const { parts } = o;
  const first = doubt[0]!;
  const body = { status: 'in_doubt' as const, step: first.step, inDoubt: doubt };
  const site = {
    chain: run.chain,
    runId,
    traceId: run.traceId,
    sessionId: run.sessionId,
    definition: chain,
    startedAt: run.startedAt,
    priorTrace: priorTraceOf(run),
  };
  const result = earlyResult(parts, site, body);
  const until = o.now() + STORE_WAIT_MS;
  try {
    if (!(await o.bounded('finish', until, () => o.store.finish(runId, o.owner, 'in_doubt', result, Infinity)))) {
      return earlyResult(parts, site, earlyFailure(o.calls, 'conflict', 'lease_lost', o.leaseLost(runId).message));
    }
  } catch (error) {
    o.warn(error, `could not park run ${runId} in doubt`);
    return earlyResult(
      parts,
      site,
      earlyFailure(o.calls, 'unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)),
    );
  } finally {
    o.leases.release(runId);
  }
  parts.logger?.warn(
    {
      runId,
      traceId: run.traceId,
      chain: run.chain,
      step: first.step,
      tool: first.tool,
      owner: o.owner,
      previousOwner,
    },
    `durable runs: run ${runId} parked in_doubt: step ${first.step} (${first.tool}) was in flight ` +
      'when its runner stopped and may have taken effect; decide it with runner.decide(runId, { retry, by })',
  );
  await o.ended(result, true, until);
  return result;
}

/**
 * Settles a run parked `in_doubt` exactly once across instances: retried and continued, or failed and
 * compensated (`outcome_unknown`; with `cancelled`, the cancel's reason, `run_cancelled`).
 *
 * @example
 * ```ts
 * const settled = await settleDoubt(o, run, { retry: false, by: 'ops@example.com' });
 * ```
 */
export async function settleDoubt(
  o: DurableOwner,
  run: StoredRun,
  decision: RetryDecision,
  cancelled?: string,
): Promise<DecideResult> {
  const chain = o.chainOf(run);
  if (!chain) {
    throw new TypeError(
      `Run ${run.runId} is in doubt, and this runner cannot continue it: ` +
        `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
    );
  }
  const doubt = writesInDoubt(run);
  const first = doubt[0];
  const step = first?.step ?? '';
  const mark = { retry: decision.retry, by: decision.by, at: o.now() };
  const { retryTable } = o.calls;
  // Refused: the decision is also the compensation's start, so a
  // runner that dies while undoing leaves a run that is only undone.
  const error = decision.retry
    ? undefined
    : cancelled !== undefined
      ? toErrorInfo(
          {
            category: 'cancelled',
            code: 'run_cancelled',
            message:
              `The run was cancelled${cancelled ? `: ${cancelled}` : ''}; ` +
              `step ${step}, in doubt, was not called again.`,
          },
          { step, ...(first && { tool: first.tool }) },
          retryTable,
        )
      : toErrorInfo(
          {
            category: 'unknown',
            code: 'outcome_unknown',
            message:
              `Step ${step}${first ? ` (${first.tool})` : ''} was in flight when its runner stopped; ` +
              `whether it took effect is unknown, and ${decision.by} decided not to call it again.`,
          },
          {
            step,
            ...(first && { tool: first.tool }),
            userMessage:
              'It is not known whether this step took effect, so it was not repeated. ' +
              'Check it before trying again.',
          },
          retryTable,
        );
  const entry: JournalEntry = error ? { step, decision: mark, compensation: 'start', error } : { step, decision: mark };
  const taken = await takeInDoubt(o, run, chain, entry);
  if (!taken) return 'not_parked';
  const exec = continuation({ ...run, journal: [...run.journal, entry] }, chain);
  if (error) exec.compensating = { error, undone: [] };
  return ownSegment(
    o,
    exec,
    taken.deadlineAt,
    false,
    taken.leaseUntil,
    decision.retry ? { steps: new Set(doubt.map((d) => d.step)), by: decision.by } : undefined,
  );
}

/**
 * Takes a run in doubt for this runner with `entry` (the decision) journaled
 * in the same write; `false` if another decision took it first.
 */
async function takeInDoubt(
  o: DurableOwner,
  run: StoredRun,
  chain: Chain,
  entry: JournalEntry,
): Promise<{ leaseUntil: number; deadlineAt: number } | false> {
  const { store } = o;
  if (!store.takeParked)
    throw new TypeError(
      'Deciding a run in doubt needs a run store with takeParked(): ' +
        'memoryRunStore(), redisStores(...) or postgresStores(...).',
    );
  const t = o.now();
  // The run waited for a person: its decision starts a new segment, with the chain's whole time budget.
  const update = { leaseUntil: t + o.leaseMs, deadlineAt: t + chain.timeoutMs };
  const taken = await o.bounded('take', t + STORE_WAIT_MS, () =>
    store.takeParked!(run.runId, o.owner, 'in_doubt', update, entry, { step: entry.step, journal: run.journal.length }),
  );
  if (!taken) return false;
  o.leases.hold(run.runId, update.leaseUntil);
  return update;
}
