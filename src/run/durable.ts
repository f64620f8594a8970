// Durable runs (docs/guides/durable-runs.md): with `stores.runs`, a run is recorded before its first
// step, each step journaled before a step that depends on it starts, the result recorded at the end.
// The owner renews its leases with one timer (lease.ts); `recover()` continues runs whose owner died.
// The parts: durable-owner.ts (shared state), durable-segment.ts (a run this runner owns),
// durable-recovery.ts, durable-waiting.ts, durable-doubt.ts, retry-waits.ts.
import type { RunResult } from '../observe/result.js';
import type { ShownTo } from './visibility.js';
import type { CreateRunResult, RunRecord, RunStore, StoredRun } from '../stores/run-store.js';
import type { RunStatus } from '../stores/run-listing.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { hashContext } from './checkpoint.js';
import { settleDoubt } from './durable-doubt.js';
import { DurableOwner, type DurableOptions } from './durable-owner.js';
import { cancelExpired, claimAndStart, resumeStored } from './durable-recovery.js';
import { ownSegment } from './durable-segment.js';
import { cancelWaiting, signalRun } from './durable-waiting.js';
import type { Execution } from './execution.js';
import { decider, journaledSteps, writesInDoubt } from './journal.js';
import type { InDoubtStep } from '../observe/result.js';
import type { RunnerParts } from './parts.js';
import { retryWaits } from './retry-waits.js';
import { checkRunId } from './run-id.js';
import type { DecideResult, RetryDecision } from './types.js';
import type { SignalResult } from './signal.js';

/** What `runner.getRun(runId)` tells about a durable run. */
export interface RunInfo {
  runId: string;
  chain: string;
  status: RunStatus;
  /** The runner instance that runs it (while `running`), or ran it last. */
  owner: string;
  /** Epoch ms until which the owner's lease holds (0 once it ended or parked). */
  leaseUntil: number;
  /** Ids of the journaled (completed or skipped) steps, in the order they completed. */
  steps: string[];
  /** The recorded result, once the run ended or parked at a gate. */
  result?: RunResult;
  /** Who decided its gate, or its write in doubt, through `runner.decide` (from the journal or the recorded result). */
  decidedBy?: string;
  /** A run `in_doubt`: the plain writes whose outcome is unknown (step, tool, redacted input, when they started). */
  inDoubt?: InDoubtStep[];
}

/** The durable side of a runner; absent without `stores.runs` (the memory path pays nothing). */
export interface Durable {
  /** Records a fresh run and runs it, or answers for the run id's existing record. */
  run(exec: Execution): Promise<RunResult>;
  /** Continues a run approved at its gate, durably. */
  resume(exec: Execution): Promise<RunResult>;
  /** Ends a run parked at a gate with `result` (declined by a decision): reopened for this runner, then finished. */
  endParked(result: RunResult): Promise<RunResult>;
  /** Claims runs whose owner died and continues them (or parks them `in_doubt`); resolves with their results. */
  recover(): Promise<RunResult[]>;
  /**
   * Settles a run parked `in_doubt` (read as `run`) exactly once across instances: retried and
   * continued, or failed and compensated (`outcome_unknown`; with `cancelled`, the cancel's reason, `run_cancelled`).
   */
  settleDoubt(run: StoredRun, decision: RetryDecision, cancelled?: string): Promise<DecideResult>;
  /** The stored run, or `undefined` (also when `shown` says it is not to be shown). */
  info(runId: string, shown?: ShownTo): Promise<RunInfo | undefined>;
  /** Stops polling and renewing: runs in flight stay recorded, for another instance to recover. */
  close(): void;
  /**
   * Cancels a run in flight whose owner's lease expired (its owner died): takes it over, undoes its
   * completed steps and ends it `failed`/`run_cancelled`. `undefined` when this runner cannot (no such
   * chain or another definition here, or another runner took it first).
   */
  cancelExpired(run: StoredRun, reason: string | undefined): Promise<RunResult | undefined>;
  /**
   * Brings a run parked at a `waitFor` step its signal (API.md §12): the payload checked against the
   * step's schema (refused: rejects with `SignalRefused`, the run keeps waiting), the run taken
   * exactly once with the payload journaled as the step's result, then continued.
   */
  signal(runId: string, name: string, payload: unknown, shown?: ShownTo): Promise<SignalResult>;
  /**
   * Cancels a run parked `waiting`: taken exactly once, it ends
   * `failed`/`run_cancelled`, its completed steps undone; `undefined` if taken first.
   */
  cancelWaiting(run: StoredRun, reason: string | undefined): Promise<RunResult | undefined>;
}

/**
 * The durable side of a runner over `store`: one owner id, one lease timer, one optional recovery poll.
 *
 * @example
 * ```ts
 * const durable = new DurableRuns(parts, stores.runs, { leaseMs: 30_000 });
 * const result = await durable.run(execution);
 * ```
 */
export class DurableRuns implements Durable {
  private readonly o: DurableOwner;
  private poll: ReturnType<typeof setInterval> | undefined;
  private polling = false;

  constructor(parts: RunnerParts, store: RunStore, options: DurableOptions) {
    const o = (this.o = new DurableOwner(parts, store, options));
    if (store.markRetrying)
      parts.recorder.retryWait = retryWaits(
        store.markRetrying.bind(store),
        o.owner,
        o.now,
        (runId) => o.leases.get(runId) !== undefined,
        o.bounded,
        o.warn,
      );
    if (options.recover) {
      // Background recovery never overlaps its own claims and never keeps the process alive; the runs
      // it claims go on by themselves, so one slow run never delays picking up the others.
      this.poll = setInterval(() => {
        if (this.polling || o.closed) return;
        this.polling = true;
        claimAndStart(o)
          .then(
            (started) => {
              for (const p of started) p.catch((error: unknown) => o.warn(error, 'a recovered run failed'));
            },
            (error: unknown) => o.warn(error, 'recovery poll failed'),
          )
          .finally(() => (this.polling = false));
      }, options.recover.intervalMs);
      this.poll.unref?.();
    }
  }

  async run(exec: Execution): Promise<RunResult> {
    const { o } = this;
    const deadlineAt = exec.startedAt + exec.chain.timeoutMs;
    const leaseUntil = o.now() + o.leaseMs;
    let created: CreateRunResult;
    try {
      created = await o.bounded('create', deadlineAt, () =>
        o.store.create(this.record(exec, deadlineAt, leaseUntil), o.now()),
      );
    } catch (error) {
      exec.recorded?.(false);
      return o.refuse(exec, 'store_unavailable', error instanceof Error ? error.message : String(error));
    }
    // A record from before runs kept their context's hash is bound to no caller (the stores take it for anyone's):
    // its result is not handed to whoever names its id.
    if (created.status !== 'created' && created.status !== 'mismatch' && created.run.contextHash === undefined)
      created = { status: 'mismatch' };
    // This caller's own run: a new one, or one recorded with this chain and context (`ended`: a retried request;
    // `taken`: its owner died; `busy`: in flight elsewhere, this call refused: joined, watched to its own end).
    exec.recorded?.(created.status === 'mismatch' ? false : created.status === 'busy' ? 'joined' : true);
    if (o.closed && (created.status === 'created' || created.status === 'taken'))
      return o.refuse(exec, 'runner_closed', 'The runner was closed; the run stays recorded for another to recover.');
    switch (created.status) {
      case 'created':
        return ownSegment(o, exec, deadlineAt, false, leaseUntil);
      case 'ended':
        return created.run.result as RunResult; // the caller's retry: the recorded result, no tool called
      case 'busy':
        return o.refuse(
          exec,
          'run_in_progress',
          `Run ${exec.runId} is in flight on another runner; try again later, or use a new run id.`,
        );
      case 'taken':
        return resumeStored(o, created.run, created.run.previousOwner ?? '', leaseUntil, exec.chain);
      case 'mismatch':
        return o.refuse(exec, 'run_id_taken', `Run id ${exec.runId} is taken; use a new run id.`);
    }
  }

  async resume(exec: Execution): Promise<RunResult> {
    const { o } = this;
    const deadlineAt = exec.deadlineAt ?? (exec.segmentStart ?? o.now()) + exec.chain.timeoutMs;
    const leaseUntil = o.now() + o.leaseMs;
    try {
      const reopened = await o.bounded('reopen', deadlineAt, () =>
        o.store.reopen(exec.runId, o.owner, { leaseUntil, approvedGate: exec.approvedGate!, deadlineAt }),
      );
      // Parked before the run store was configured (or its record expired): record it now.
      if (!reopened) {
        const record = this.record(exec, deadlineAt, leaseUntil);
        if (exec.approvedGate !== undefined) record.approvedGate = exec.approvedGate;
        const created = await o.bounded('create', deadlineAt, () => o.store.create(record, o.now()));
        if (created.status !== 'created')
          return o.refuse(
            exec,
            'run_in_progress',
            `Run ${exec.runId} is recorded elsewhere; it cannot be resumed here.`,
          );
      }
    } catch (error) {
      return o.refuse(exec, 'store_unavailable', error instanceof Error ? error.message : String(error));
    }
    return ownSegment(o, exec, deadlineAt, false, leaseUntil);
  }

  async endParked(result: RunResult): Promise<RunResult> {
    const { o } = this;
    const { runId } = result;
    const until = o.now() + STORE_WAIT_MS;
    const gate = result.status === 'declined' ? result.step : '';
    try {
      // The checkpoint is taken already: nobody else reopens the run, and its end is recorded once.
      if (
        await o.bounded('reopen', until, () =>
          o.store.reopen(runId, o.owner, { leaseUntil: until, approvedGate: gate, deadlineAt: until }),
        )
      ) {
        await o.bounded('finish', until, () =>
          o.store.finish(
            runId,
            o.owner,
            result.status as Exclude<RunStatus, 'running'>,
            result,
            o.keepFor(result.status),
          ),
        );
      }
    } catch (error) {
      o.warn(error, `could not record the end of run ${runId}`);
    }
    await o.ended(result, false, until);
    return result;
  }

  async recover(): Promise<RunResult[]> {
    if (this.o.closed) return [];
    return (await Promise.all(await claimAndStart(this.o))).filter((r): r is RunResult => r !== undefined);
  }

  settleDoubt(run: StoredRun, decision: RetryDecision, cancelled?: string): Promise<DecideResult> {
    return settleDoubt(this.o, run, decision, cancelled);
  }

  async info(runId: string, shown?: ShownTo): Promise<RunInfo | undefined> {
    checkRunId(runId);
    const { o } = this;
    const run = await o.bounded('get', o.now() + STORE_WAIT_MS, () => o.store.get(runId));
    if (!run || (shown && !shown(run))) return undefined;
    const decidedBy = decider(run);
    const doubt: InDoubtStep[] = run.status === 'in_doubt' ? writesInDoubt(run) : [];
    return {
      runId: run.runId,
      chain: run.chain,
      status: run.status === 'running' && run.retryingUntil !== undefined ? 'retrying' : run.status,
      owner: run.owner,
      // A custom store may keep a waiting run's wake-up there; it holds no lease.
      leaseUntil: run.status === 'waiting' ? 0 : run.leaseUntil,
      steps: journaledSteps(run),
      ...(run.result !== undefined && { result: run.result as RunResult }),
      ...(decidedBy !== undefined && { decidedBy }),
      ...(doubt.length > 0 && { inDoubt: doubt }),
    };
  }

  close(): void {
    this.o.closed = true;
    if (this.poll !== undefined) clearInterval(this.poll);
    this.o.leases.close();
    this.poll = undefined;
  }

  cancelExpired(run: StoredRun, reason: string | undefined): Promise<RunResult | undefined> {
    return cancelExpired(this.o, run, reason);
  }

  signal(runId: string, name: string, payload: unknown, shown?: ShownTo): Promise<SignalResult> {
    return signalRun(this.o, runId, name, payload, shown);
  }

  cancelWaiting(run: StoredRun, reason: string | undefined): Promise<RunResult | undefined> {
    return cancelWaiting(this.o, run, reason);
  }

  /** The record of a fresh run owned by this runner. */
  private record(exec: Execution, deadlineAt: number, leaseUntil: number): RunRecord {
    return {
      v: 1,
      runId: exec.runId,
      traceId: exec.traceId,
      chain: exec.chain.name,
      fingerprint: exec.chain.fingerprint,
      ...(exec.sessionId !== undefined && { sessionId: exec.sessionId }),
      input: exec.input,
      context: exec.context,
      contextHash: hashContext(exec.context),
      startedAt: exec.startedAt,
      deadlineAt,
      status: 'running',
      owner: this.o.owner,
      leaseUntil,
    };
  }
}
