// Runs parked `waiting` at a sleep or a waitFor (API.md §12): woken when their time comes, brought their
// signal, or cancelled; each taken exactly once across instances, then continued as a new segment.
import type { Chain } from '../define/chain.js';
import type { ShownTo } from './visibility.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { toErrorInfo } from '../errors/messages.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { checkRunValue } from '../stores/run-codec.js';
import { CheckpointEncodeError } from '../stores/serialize.js';
import type { JournalEntry, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import type { DurableOwner } from './durable-owner.js';
import { ownSegment } from './durable-segment.js';
import { continuation } from './journal.js';
import { checkRunId } from './run-id.js';
import { signalPayload, SignalRefused, type SignalResult } from './signal.js';

type Waiting = Extract<RunResult, { status: 'waiting' }>['waiting'];
const waitingOf = (run: StoredRun): Waiting | undefined =>
  (run.result as Extract<RunResult, { status: 'waiting' }> | undefined)?.waiting;

/**
 * Takes a run parked `waiting` whose time has come (a sleep's end, or a waitFor's timeout: the run
 * then fails `timeout`/`wait_timeout`, its completed steps undone) and continues it; `undefined`
 * when another runner took it first, or this one cannot continue it.
 *
 * @example
 * ```ts
 * for (const runId of await store.dueWaiting(now, 100, filter)) void wake(o, runId);
 * ```
 */
export async function wake(o: DurableOwner, runId: string): Promise<RunResult | undefined> {
  const run = await o.bounded('get', o.now() + STORE_WAIT_MS, () => o.store.get(runId));
  if (!run || run.status !== 'waiting') return undefined;
  const chain = o.chainOf(run);
  if (!chain) return undefined;
  const waiting = waitingOf(run);
  const step = waiting?.step ?? '';
  const error =
    waiting?.signal !== undefined
      ? toErrorInfo(
          {
            category: 'timeout',
            code: 'wait_timeout',
            message:
              `Step ${step} waited for signal '${waiting.signal}' past its timeout` +
              `${waiting.until !== undefined ? ` (${new Date(waiting.until).toISOString()})` : ''}.`,
          },
          { step, userMessage: 'This waited too long for an answer and was stopped.' },
          o.calls.retryTable,
        )
      : undefined;
  return takeWaiting(o, run, chain, step, error);
}

/**
 * Cancels a run parked `waiting`: taken exactly once, it ends `failed`/`run_cancelled`, its
 * completed steps undone; `undefined` if taken first.
 *
 * @example
 * ```ts
 * const ended = await cancelWaiting(o, run, 'the user left');
 * ```
 */
export function cancelWaiting(
  o: DurableOwner,
  run: StoredRun,
  reason: string | undefined,
): Promise<RunResult | undefined> {
  const chain = o.chainOf(run);
  if (!chain) {
    throw new TypeError(
      `Run ${run.runId} is waiting, and this runner cannot continue it to undo its steps: ` +
        `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
    );
  }
  const step = waitingOf(run)?.step ?? '';
  const error = toErrorInfo(
    {
      category: 'cancelled',
      code: 'run_cancelled',
      message: `The run was cancelled${reason ? `: ${reason}` : ''} while it waited at step ${step}.`,
    },
    { step },
    o.calls.retryTable,
  );
  return takeWaiting(o, run, chain, step, error);
}

/**
 * Brings a run parked at a `waitFor` step its signal: the payload checked against the step's schema
 * (refused: rejects with `SignalRefused`, the run keeps waiting), the run taken exactly once with the
 * payload journaled as the step's result, then continued.
 *
 * @example
 * ```ts
 * const result = await signalRun(o, runId, 'review', { ok: true });
 * ```
 */
export async function signalRun(
  o: DurableOwner,
  runId: string,
  name: string,
  payload: unknown,
  shown?: ShownTo,
): Promise<SignalResult> {
  checkRunId(runId);
  if (typeof name !== 'string' || name === '') throw new TypeError('Expected the signal name as a non-empty string.');
  const { store } = o;
  if (!store.takeParked)
    throw new TypeError(
      'Signals need a run store with takeParked(): memoryRunStore(), redisStores(...) or postgresStores(...).',
    );
  const run = await o.bounded('get', o.now() + STORE_WAIT_MS, () => store.get(runId));
  // Another user's run: as if unknown, its payload never checked against its step (nothing told about it).
  if (!run || (shown && !shown(run))) return 'not_found';
  if (run.status !== 'waiting') return 'not_waiting';
  const chain = o.chainOf(run);
  if (!chain) {
    throw new TypeError(
      `Run ${runId} waits for a signal, and this runner cannot continue it: ` +
        `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
    );
  }
  const waiting = waitingOf(run);
  const t = o.now();
  // Past its timeout the wait is over: recovery fails the run, no late signal continues it.
  if (waiting?.until !== undefined && waiting.until <= t) return 'not_waiting';
  const accepted = signalPayload(continuation(run, chain), waiting, name, payload, runId);
  if (!accepted) return 'not_waiting';
  const parkedAt = (run.result as { trace?: { endedAt?: string } } | undefined)?.trace?.endedAt;
  const startedAt = parkedAt ?? new Date(t).toISOString();
  const trace: TraceStep = {
    stepNumber: accepted.index + 1,
    id: waiting!.step,
    status: 'success',
    attempts: 0,
    latencyMs: Math.max(0, t - Date.parse(startedAt)),
    startedAt,
  };
  const entry: JournalEntry = { step: waiting!.step, value: accepted.value, trace };
  // A payload the journal cannot keep (a function, a cycle) is refused before the take, as its schema's refusals are.
  try {
    checkRunValue(entry);
  } catch (error) {
    if (!(error instanceof CheckpointEncodeError)) throw error;
    throw new SignalRefused(`Signal ${name} to run ${runId}: its payload cannot be kept in the run's journal.`, [
      { path: [], message: error.message },
    ]);
  }
  const update = { leaseUntil: t + o.leaseMs, deadlineAt: t + chain.timeoutMs };
  const seen = { step: waiting!.step, journal: run.journal.length };
  const take = () => store.takeParked!(runId, o.owner, 'waiting', update, entry, seen);
  if (!(await o.bounded('take', t + STORE_WAIT_MS, take))) return 'not_waiting';
  o.leases.hold(runId, update.leaseUntil);
  const exec = continuation({ ...run, journal: [...run.journal, entry] }, chain);
  exec.signalled = { step: waiting!.step, signal: name };
  return ownSegment(o, exec, update.deadlineAt, false, update.leaseUntil);
}

/** Takes a waiting run for this runner (exactly once) and continues it; with `error`, it fails and compensates. */
async function takeWaiting(
  o: DurableOwner,
  run: StoredRun,
  chain: Chain,
  step: string,
  error: ChainErrorInfo | undefined,
): Promise<RunResult | undefined> {
  const entry: JournalEntry | undefined = error && { step, compensation: 'start', error };
  const t = o.now();
  // The wait is over: the run goes on as a new segment, with the chain's whole time budget.
  const update = { leaseUntil: t + o.leaseMs, deadlineAt: t + chain.timeoutMs };
  if (
    !(await o.bounded('take', t + STORE_WAIT_MS, () =>
      o.store.takeParked!(run.runId, o.owner, 'waiting', update, entry, { step, journal: run.journal.length }),
    ))
  )
    return undefined;
  o.leases.hold(run.runId, update.leaseUntil);
  const exec = continuation(entry ? { ...run, journal: [...run.journal, entry] } : run, chain);
  return ownSegment(o, exec, update.deadlineAt, true, update.leaseUntil);
}
