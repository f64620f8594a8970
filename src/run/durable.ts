// Durable runs (docs/guides/durable-runs.md): with `stores.runs`, a run is recorded before its first
// step, each step journaled before a step that depends on it starts, the result recorded at the end.
// The owner renews its leases with one timer; `recover()` continues runs whose owner died.
import type { Chain } from '../define/chain.js';
import { RunAbortReason, ToolFailure } from '../errors/classify.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import type { InDoubtStep, RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { callStore } from '../stores/guard.js';
import { encodeRunValue } from '../stores/run-codec.js';
import { CheckpointEncodeError } from '../stores/serialize.js';
import type {
  ClaimFilter,
  CreateRunResult,
  JournalEntry,
  RunRecord,
  RunStatus,
  RunStore,
  StoredRun,
} from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { UNDO_FLOOR_MS, type Calls } from './call-context.js';
import { hashContext } from './checkpoint.js';
import { settleTrace } from '../observe/trace.js';
import { earlyFailure, earlyResult } from './early-result.js';
import type { Execution } from './execution.js';
import { runEndData } from './events-log.js';
import { execute } from './executor.js';
import { newId } from './ids.js';
import type { RunnerParts } from './parts.js';
import { continuation, decider, journaledSteps, journalPlan, writesInDoubt } from './journal.js';
import { checkRunId } from './run-id.js';
import { LeaseKeeper, type Lease } from './lease.js';
import { toErrorInfo } from '../errors/messages.js';
import type { DecideResult, RetryDecision } from './types.js';
import { signalPayload, type SignalResult } from './signal.js';

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

/** Default lease: how long an owner's silence counts as its death. */
const DEFAULT_LEASE_MS = 30_000;
/**
 * Default retention of an ended run (`retention.completedMs`,
 * `retention.failedMs`): its result kept for callers retrying its run id.
 */
const RETENTION_MS = 24 * 3_600_000;
/** Runs claimed per `recover()` call. */
const DEFAULT_RECOVER_LIMIT = 100;

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
  /** The stored run, or `undefined`. */
  info(runId: string): Promise<RunInfo | undefined>;
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
  signal(runId: string, name: string, payload: unknown): Promise<SignalResult>;
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
 * const durable = durableRuns(parts, stores.runs, { leaseMs: 30_000 });
 * const result = await durable.run(execution);
 * ```
 */
export function durableRuns(
  parts: RunnerParts,
  store: RunStore,
  options: {
    leaseMs?: number;
    recover?: { intervalMs: number; limit?: number };
    retention?: { completedMs?: number; failedMs?: number };
  },
): Durable {
  const { calls, logger } = parts;
  const now = calls.now;
  const owner = newId();
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const completedMs = options.retention?.completedMs ?? RETENTION_MS;
  const failedMs = options.retention?.failedMs ?? RETENTION_MS;
  /**
   * How long the store keeps a run that ended (or parked) so:
   * its kind's retention; a parked run until its token expires.
   */
  const keepFor = (status: RunResult['status']): number =>
    status === 'failed' ? failedMs : status === 'awaiting_confirmation' ? parts.gates.confirmationTtlMs : completedMs;
  let poll: ReturnType<typeof setInterval> | undefined;
  let polling = false;
  let closed = false;

  const warn = (error: unknown, what: string): void => logger?.warn({ err: error, owner }, `durable runs: ${what}`);
  /** A run-store call bounded by STORE_WAIT_MS and `until`; failures are `store_unavailable`. */
  const bounded = <T>(what: string, until: number, fn: () => Promise<T>): Promise<T> => {
    const t = now();
    return Promise.resolve(callStore(fn, Math.min(t + STORE_WAIT_MS, Math.max(until, t + 1)), now, `run (${what})`));
  };
  const leases = new LeaseKeeper(store, owner, leaseMs, now, bounded, warn);
  const leaseLost = (runId: string): ToolFailure =>
    new ToolFailure({
      category: 'conflict',
      code: 'lease_lost',
      message: `Run ${runId} was taken over by another runner (this runner's lease expired); it stopped here.`,
    });
  /** The calls of durable runs: every tool call and undo passes the lease's fence first. */
  const fencedCalls: Calls = {
    ...calls,
    call(ctx) {
      const open = leases.fence(ctx.runId);
      if (open === true) return calls.call(ctx);
      const refused = (): Promise<never> => Promise.reject(leases.get(ctx.runId)?.failed ?? leaseLost(ctx.runId));
      return open === false ? refused() : open.then((yes) => (yes ? calls.call(ctx) : refused()));
    },
  };
  const durableParts: RunnerParts = { ...parts, calls: fencedCalls };

  /** Runs `exec` as a durable run this runner owns: journal each step and each undo, record the end. */
  const own = (
    exec: Execution,
    deadlineAt: number,
    recovered: boolean,
    leaseUntil: number,
    retried?: { steps: ReadonlySet<string>; by: string },
  ): Promise<RunResult> => {
    const { runId } = exec;
    const plan = journalPlan(exec.chain);
    const atEnd: JournalEntry[] = [];
    const lease = leases.hold(runId, leaseUntil);
    // A lease found lost while a tool runs (by the renewal timer) stops the run at once, retries included;
    // so does a cancel from any instance (announced through the run's event log).
    // One controller for both (a cancel aborts the run's event writer's): no signal combined per run.
    const events = parts.recorder.runEvents;
    lease.stop = events ? events.open(runId).stopper : new AbortController();
    const stops = [lease.stop.signal];
    if (exec.signal) stops.push(exec.signal);
    // any: Node 20.3+
    exec.signal =
      stops.length === 1 || typeof AbortSignal.any !== 'function' ? stops[stops.length - 1]! : AbortSignal.any(stops);
    exec.deadlineAt = deadlineAt;
    exec.durable = { runId, owner, takeOver: true };
    exec.interrupted = () => lease.lost || lease.failed !== undefined;
    if (store.parkWaiting) exec.parks = true;
    exec.journal = (entry: JournalEntry) => {
      // A write retried by a decision: who decided shows on its trace entry (journaled, and in the result's trace).
      if (retried?.steps.has(entry.step) && entry.trace) entry.trace.decidedBy = retried.by;
      if (plan.skip.has(entry.step)) return true;
      if (plan.atEnd.has(entry.step)) {
        encodeRunValue(entry); // a value no store keeps fails its step now, not the end write
        return void atEnd.push(entry);
      }
      return write(entry).then((kept) => {
        if (!kept) throw lease.failed ?? leaseLost(runId);
      });
    };
    /** Journals `entry`; `false` when the lease is lost or the store failed (the run is then interrupted). */
    const write = async (entry: JournalEntry): Promise<boolean> => {
      if (lease.lost || lease.failed) return false;
      try {
        if (
          await bounded('journal', Math.max(deadlineAt, now() + UNDO_FLOOR_MS), () =>
            store.journal(runId, owner, entry),
          )
        )
          return true;
        leases.lose(lease);
      } catch (error) {
        // A value the codec refuses fails its step (the run then ends as any failed run); anything else is the store's.
        if (error instanceof CheckpointEncodeError) throw error;
        lease.failed = error;
      }
      return false;
    };
    // A plain write is journaled as started before it is called:
    // whoever finds it with no outcome parks the run in doubt.
    exec.beforeWrite = async (ctx) => {
      const started: JournalEntry = {
        step: ctx.step!,
        started: {
          tool: ctx.tool.name,
          input: parts.recorder.redacted(ctx.input),
          at: now(),
          ...(retried?.steps.has(ctx.step!) && { decidedBy: retried.by }),
        },
      };
      try {
        encodeRunValue(started);
      } catch {
        delete started.started!.input; // an input the journal cannot encode is not shown, the start still recorded
      }
      if (!(await write(started))) throw lease.failed ?? leaseLost(runId);
    };
    let compensating = exec.compensating !== undefined;
    exec.undoJournal = {
      start: (error) => {
        if (compensating) return true;
        compensating = true;
        return write({ step: '', compensation: 'start', error, trace: COMPENSATION_TRACE }).catch(() => false);
      },
      undone: (step, trace, error) =>
        write({ step, compensation: error ? 'undo_failed' : 'undone', ...(error && { error }), trace }).catch(
          () => false,
        ),
    };
    exec.onEnd = async (result: RunResult) => {
      leases.release(runId);
      // A run cut off by close(), a failed store or a lost lease has not ended: its next owner ends it.
      if (result.status === 'failed' && result.error.code === 'runner_closed')
        return events?.close(runId, undefined, undefined, now()); // not ended: nothing to wait for
      if (lease.lost || lease.failed) {
        await events?.close(runId, undefined, undefined, now());
        return interruptedResult(result, lease);
      }
      let recorded = false;
      const until = Math.max(deadlineAt, now() + UNDO_FLOOR_MS); // the end write keeps the run's deadline
      try {
        recorded = await bounded('finish', until, () =>
          result.status === 'waiting'
            ? park(runId, result, atEnd)
            : store.finish(runId, owner, result.status, result, keepFor(result.status), atEnd),
        );
      } catch (error) {
        if (error instanceof CheckpointEncodeError) recorded = await finishPlain(runId, result, until, atEnd);
        else warn(error, `could not record the end of run ${runId}`);
      }
      // Steps journaled with the end, and a compensation, are done only once the end is recorded:
      // otherwise the run stays in flight (its next owner finishes it from the journal) and this caller is told so.
      await events?.close(
        runId,
        recorded ? runEndData(result, (v) => parts.recorder.redacted(v)) : undefined,
        recorded ? keepFor(result.status) : undefined,
        until,
      );
      if (!recorded && (atEnd.length > 0 || compensating)) return unrecorded(result);
      safeRunEnd(result, recovered);
    };
    return execute(durableParts, exec);
  };

  /**
   * Parks a run `waiting` (API.md §12): no owner, no lease, a wake-up at a sleep's end or a waitFor's
   * timeout. A sleep is journaled done in the same write: the run goes on after it once woken.
   */
  const park = (
    runId: string,
    result: Extract<RunResult, { status: 'waiting' }>,
    atEnd: readonly JournalEntry[],
  ): Promise<boolean> => {
    const { step, until, signal } = result.waiting;
    const entries = [...atEnd];
    if (signal === undefined) {
      const trace = traceOf(result.trace.steps, step);
      entries.push({ step, value: null, ...(trace && { trace: { ...trace, status: 'success' as const } }) });
    }
    return store.parkWaiting!(runId, owner, result, until ?? null, entries);
  };

  /**
   * Takes a run parked `waiting` whose time has come (a sleep's end, or a waitFor's timeout: the run
   * then fails `timeout`/`wait_timeout`, its completed steps undone) and continues it; `undefined`
   * when another runner took it first, or this one cannot continue it.
   */
  const wake = async (runId: string): Promise<RunResult | undefined> => {
    const run = await bounded('get', now() + STORE_WAIT_MS, () => store.get(runId));
    if (!run || run.status !== 'waiting') return undefined;
    const chain = parts.chains.get(run.chain);
    if (!chain || chain.fingerprint !== run.fingerprint) return undefined;
    const waiting = (run.result as Extract<RunResult, { status: 'waiting' }> | undefined)?.waiting;
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
            calls.retryTable,
          )
        : undefined;
    return takeWaiting(run, chain, step, error);
  };

  /**
   * Takes a waiting run for this runner (exactly once) and
   * continues it; with `error`, it fails and compensates instead.
   */
  const takeWaiting = async (
    run: StoredRun,
    chain: Chain,
    step: string,
    error: ChainErrorInfo | undefined,
  ): Promise<RunResult | undefined> => {
    const entry: JournalEntry | undefined = error && { step, compensation: 'start', error };
    const t = now();
    // The wait is over: the run goes on as a new segment, with the chain's whole time budget.
    const update = { leaseUntil: t + leaseMs, deadlineAt: t + chain.timeoutMs };
    if (
      !(await bounded('take', t + STORE_WAIT_MS, () => store.takeParked!(run.runId, owner, 'waiting', update, entry)))
    )
      return undefined;
    leases.hold(run.runId, update.leaseUntil);
    const exec = continuation(entry ? { ...run, journal: [...run.journal, entry] } : run, chain);
    return own(exec, update.deadlineAt, true, update.leaseUntil);
  };

  /** The end of a run whose result the codec refused (a value in its trace or `completed`): recorded without them. */
  const finishPlain = async (
    runId: string,
    result: RunResult,
    until: number,
    atEnd: readonly JournalEntry[],
  ): Promise<boolean> => {
    const plain = {
      ...result,
      trace: { ...result.trace, steps: result.trace.steps.map(({ input: _i, output: _o, ...step }) => step) },
      ...('completed' in result && { completed: {} }),
      ...('output' in result && { output: undefined }),
    };
    try {
      return await bounded('finish', until, () =>
        store.finish(runId, owner, result.status, plain, keepFor(result.status), atEnd),
      );
    } catch (error) {
      warn(error, `could not record the end of run ${runId}`);
      return false;
    }
  };

  /** A run cut off by a lost lease or a failed store: the caller learns that, not a failure that was never recorded. */
  const interruptedResult = (result: RunResult, lease: Lease): RunResult => {
    const body =
      lease.failed !== undefined
        ? earlyFailure(
            calls,
            'unavailable',
            'store_unavailable',
            lease.failed instanceof Error ? lease.failed.message : String(lease.failed),
          )
        : earlyFailure(calls, 'conflict', 'lease_lost', leaseLost(result.runId).message);
    // The step whose record failed (or that found the lease lost): the caller learns where it stopped.
    if (result.status === 'failed' && result.error.step !== undefined) body.error.step = result.error.step;
    settleTrace(result.trace, 'failed', body.error);
    return {
      ...body,
      completed: 'completed' in result ? result.completed : {},
      runId: result.runId,
      chain: result.chain,
      trace: result.trace,
      metadata: result.metadata,
    };
  };

  const unrecorded = (result: RunResult): RunResult => {
    const body = earlyFailure(
      calls,
      'unavailable',
      'store_unavailable',
      `Run ${result.runId} ran to its end, but the run store did not record it; ` +
        'a runner will finish it from its journal.',
    );
    settleTrace(result.trace, 'failed', body.error);
    return { ...body, runId: result.runId, chain: result.chain, trace: result.trace, metadata: result.metadata };
  };

  const safeRunEnd = (result: RunResult, recovered: boolean): void => parts.recorder.durableRunEnded(result, recovered);

  /** Continues a stored run this runner now owns (taken over or claimed) from its journal. */
  const resumeStored = (
    run: StoredRun,
    previousOwner: string,
    leaseUntil: number,
    given?: Chain,
  ): Promise<RunResult> => {
    const chain = given ?? parts.chains.get(run.chain);
    if (!chain || chain.fingerprint !== run.fingerprint) return endOrphan(run, chain);
    const doubt = writesInDoubt(run);
    if (doubt.length > 0) return parkInDoubt(run, chain, doubt, previousOwner);
    parts.recorder.runRecovered(run, previousOwner, owner);
    const exec = continuation(run, chain);
    if (run.cancelRequested) {
      // Cancelled while its owner was gone: no step starts, what it completed is compensated.
      const stop = new AbortController();
      stop.abort(
        new RunAbortReason(
          'cancelled',
          `The run was cancelled${run.cancelRequested.reason ? `: ${run.cancelRequested.reason}` : ''}.`,
          'run_cancelled',
        ),
      );
      exec.signal = stop.signal;
    }
    return own(exec, run.deadlineAt, true, leaseUntil);
  };

  /**
   * A run claimed without its definition here: past its deadline (the claim allows nothing else), it
   * ends `deadline_exceeded`; nothing can be undone without the definition, and the result says so.
   */
  const endOrphan = (run: StoredRun, chain: Chain | undefined): Promise<RunResult> => {
    const why = chain ? `chain ${run.chain} has changed here` : `this runner has no chain named '${run.chain}'`;
    const result = earlyResult(
      parts,
      {
        chain: run.chain,
        runId: run.runId,
        traceId: run.traceId,
        sessionId: run.sessionId,
        startedAt: run.startedAt,
        priorTrace: priorTraceOf(run),
      },
      earlyFailure(
        calls,
        'timeout',
        'deadline_exceeded',
        `Run ${run.runId} passed its deadline with no runner able to continue it; ` +
          `${why}, so its completed steps could not be compensated.`,
      ),
    );
    return bounded('finish', now() + STORE_WAIT_MS, () =>
      store.finish(run.runId, owner, 'failed', result, keepFor('failed')),
    )
      .then(
        () => result,
        (error: unknown) => {
          warn(error, `could not record the end of run ${run.runId}`);
          return result;
        },
      )
      .finally(() => leases.release(run.runId));
  };

  /**
   * A run found with a plain write started and no outcome journaled (its owner died or lost its lease
   * mid-call): the write may have taken effect, so it is not called again (API.md §6, §10). The run is
   * parked `in_doubt` (no owner, no lease, never claimed again) until `runner.decide(runId, { retry, by })`.
   */
  const parkInDoubt = async (
    run: StoredRun,
    chain: Chain,
    doubt: InDoubtStep[],
    previousOwner: string,
  ): Promise<RunResult> => {
    const { runId } = run;
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
    const until = now() + STORE_WAIT_MS;
    try {
      if (!(await bounded('finish', until, () => store.finish(runId, owner, 'in_doubt', result, Infinity)))) {
        return earlyResult(parts, site, earlyFailure(calls, 'conflict', 'lease_lost', leaseLost(runId).message));
      }
    } catch (error) {
      warn(error, `could not park run ${runId} in doubt`);
      return earlyResult(
        parts,
        site,
        earlyFailure(calls, 'unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)),
      );
    } finally {
      leases.release(runId);
    }
    logger?.warn(
      { runId, traceId: run.traceId, chain: run.chain, step: first.step, tool: first.tool, owner, previousOwner },
      `durable runs: run ${runId} parked in_doubt: step ${first.step} (${first.tool}) was in flight ` +
        'when its runner stopped and may have taken effect; decide it with runner.decide(runId, { retry, by })',
    );
    const log = parts.recorder.runEvents;
    if (log) {
      log.open(runId);
      await log.close(
        runId,
        runEndData(result, (v) => parts.recorder.redacted(v)),
        keepFor('failed'),
        until,
      );
    }
    safeRunEnd(result, true);
    return result;
  };

  /**
   * Takes a run in doubt for this runner with `entry` (the decision)
   * journaled in the same write; `false` if another decision took it first.
   */
  const takeInDoubt = async (
    run: StoredRun,
    chain: Chain,
    entry: JournalEntry,
  ): Promise<{ leaseUntil: number; deadlineAt: number } | false> => {
    if (!store.takeParked)
      throw new TypeError(
        'Deciding a run in doubt needs a run store with takeParked(): ' +
          'memoryRunStore(), redisStores(...) or postgresStores(...).',
      );
    const t = now();
    // The run waited for a person: its decision starts a new segment, with the chain's whole time budget.
    const update = { leaseUntil: t + leaseMs, deadlineAt: t + chain.timeoutMs };
    const taken = await bounded('take', t + STORE_WAIT_MS, () =>
      store.takeParked!(run.runId, owner, 'in_doubt', update, entry),
    );
    if (!taken) return false;
    leases.hold(run.runId, update.leaseUntil);
    return update;
  };

  /** The chains this runner can continue: what a claim is filtered by. */
  const claimFilter = (t: number): ClaimFilter => ({
    chains: [...parts.chains.values()].map((c) => ({ name: c.name, fingerprint: c.fingerprint })),
    // Runs nobody here can continue are ended once their deadline is
    // well past (their own runners had a lease's worth of polls first).
    orphanedBefore: t - Math.max(ORPHAN_GRACE_MS, 2 * leaseMs),
  });

  /**
   * Claims expired runs this runner can continue and starts them, and wakes its waiting runs
   * whose time came; resolves with their results' promises (`undefined`: taken by another first).
   */
  const claimAndStart = async (): Promise<Promise<RunResult | undefined>[]> => {
    const t = now();
    const until = t + leaseMs;
    const claimed = await bounded('claim', t + STORE_WAIT_MS, () =>
      store.claimExpired(owner, t, until, options.recover?.limit ?? DEFAULT_RECOVER_LIMIT, claimFilter(t)),
    );
    if (claimed.length === 0)
      logger?.debug(
        { owner },
        'durable runs: recover() found no expired run of a chain (and fingerprint) this runner has',
      );
    for (const run of claimed) leases.hold(run.runId, until);
    const started: Promise<RunResult | undefined>[] = claimed.map((run) =>
      resumeStored(run, run.owner === owner ? '' : run.owner, until),
    );
    if (store.dueWaiting && store.takeParked) {
      const due = await bounded('due', t + STORE_WAIT_MS, () =>
        store.dueWaiting!(t, options.recover?.limit ?? DEFAULT_RECOVER_LIMIT, claimFilter(t)),
      );
      for (const runId of due) started.push(wake(runId));
    }
    return started;
  };

  const refuse = (exec: Execution, code: string, message: string): RunResult =>
    earlyResult(
      parts,
      {
        chain: exec.chain.name,
        runId: exec.runId,
        traceId: exec.traceId,
        sessionId: exec.sessionId,
        definition: exec.chain,
        startedAt: exec.startedAt,
      },
      earlyFailure(calls, code === 'store_unavailable' ? 'unavailable' : 'conflict', code, message),
    );

  const durable: Durable = {
    async run(exec) {
      const deadlineAt = exec.startedAt + exec.chain.timeoutMs;
      const leaseUntil = now() + leaseMs;
      const record: RunRecord = {
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
        owner,
        leaseUntil,
      };
      let created: CreateRunResult;
      try {
        created = await bounded('create', deadlineAt, () => store.create(record, now()));
      } catch (error) {
        return refuse(exec, 'store_unavailable', error instanceof Error ? error.message : String(error));
      }
      switch (created.status) {
        case 'created':
          return own(exec, deadlineAt, false, leaseUntil);
        case 'ended':
          return created.run.result as RunResult; // the caller's retry: the recorded result, no tool called
        case 'busy':
          return refuse(
            exec,
            'run_in_progress',
            `Run ${exec.runId} is in flight on another runner; try again later, or use a new run id.`,
          );
        case 'taken':
          return resumeStored(created.run, created.run.owner, leaseUntil, exec.chain);
        case 'mismatch':
          return refuse(exec, 'run_id_taken', `Run id ${exec.runId} is taken; use a new run id.`);
      }
    },

    async resume(exec) {
      const deadlineAt = exec.deadlineAt ?? (exec.segmentStart ?? now()) + exec.chain.timeoutMs;
      const leaseUntil = now() + leaseMs;
      try {
        const reopened = await bounded('reopen', deadlineAt, () =>
          store.reopen(exec.runId, owner, { leaseUntil, approvedGate: exec.approvedGate!, deadlineAt }),
        );
        // Parked before the run store was configured (or its record expired): record it now.
        if (!reopened) {
          const created = await bounded('create', deadlineAt, () =>
            store.create(
              {
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
                owner,
                leaseUntil,
                ...(exec.approvedGate !== undefined && { approvedGate: exec.approvedGate }),
              },
              now(),
            ),
          );
          if (created.status !== 'created')
            return refuse(
              exec,
              'run_in_progress',
              `Run ${exec.runId} is recorded elsewhere; it cannot be resumed here.`,
            );
        }
      } catch (error) {
        return refuse(exec, 'store_unavailable', error instanceof Error ? error.message : String(error));
      }
      return own(exec, deadlineAt, false, leaseUntil);
    },

    async endParked(result) {
      const { runId } = result;
      const until = now() + STORE_WAIT_MS;
      const gate = result.status === 'declined' ? result.step : '';
      try {
        // The checkpoint is taken already: nobody else reopens the run, and its end is recorded once.
        if (
          await bounded('reopen', until, () =>
            store.reopen(runId, owner, { leaseUntil: until, approvedGate: gate, deadlineAt: until }),
          )
        ) {
          await bounded('finish', until, () =>
            store.finish(runId, owner, result.status as Exclude<RunStatus, 'running'>, result, keepFor(result.status)),
          );
        }
      } catch (error) {
        warn(error, `could not record the end of run ${runId}`);
      }
      const events = parts.recorder.runEvents;
      if (events) {
        events.open(runId);
        await events.close(
          runId,
          runEndData(result, (v) => parts.recorder.redacted(v)),
          keepFor(result.status),
          until,
        );
      }
      safeRunEnd(result, false);
      return result;
    },

    async recover() {
      if (closed) return [];
      return (await Promise.all(await claimAndStart())).filter((r): r is RunResult => r !== undefined);
    },

    async settleDoubt(run, decision, cancelled) {
      const chain = parts.chains.get(run.chain);
      if (!chain || chain.fingerprint !== run.fingerprint) {
        throw new TypeError(
          `Run ${run.runId} is in doubt, and this runner cannot continue it: ` +
            `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
        );
      }
      const doubt = writesInDoubt(run);
      const first = doubt[0];
      const step = first?.step ?? '';
      const mark = { retry: decision.retry, by: decision.by, at: now() };
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
              calls.retryTable,
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
              calls.retryTable,
            );
      const entry: JournalEntry = error
        ? { step, decision: mark, compensation: 'start', error }
        : { step, decision: mark };
      const taken = await takeInDoubt(run, chain, entry);
      if (!taken) return 'not_parked';
      const exec = continuation({ ...run, journal: [...run.journal, entry] }, chain);
      if (error) exec.compensating = { error, undone: [] };
      return own(
        exec,
        taken.deadlineAt,
        false,
        taken.leaseUntil,
        decision.retry ? { steps: new Set(doubt.map((d) => d.step)), by: decision.by } : undefined,
      );
    },

    async info(runId) {
      checkRunId(runId);
      const run = await bounded('get', now() + STORE_WAIT_MS, () => store.get(runId));
      if (!run) return undefined;
      const decidedBy = decider(run);
      const doubt = run.status === 'in_doubt' ? writesInDoubt(run) : [];
      return {
        runId: run.runId,
        chain: run.chain,
        status: run.status === 'running' && run.retryingUntil !== undefined ? 'retrying' : run.status,
        owner: run.owner,
        leaseUntil: run.status === 'waiting' ? 0 : run.leaseUntil,
        steps: journaledSteps(run),
        ...(run.result !== undefined && { result: run.result as RunResult }),
        ...(decidedBy !== undefined && { decidedBy }),
        ...(doubt.length > 0 && { inDoubt: doubt }),
      };
    },

    close() {
      closed = true;
      if (poll !== undefined) clearInterval(poll);
      leases.close();
      poll = undefined;
    },

    async cancelExpired(run, reason) {
      const chain = parts.chains.get(run.chain);
      if (closed || !chain || chain.fingerprint !== run.fingerprint) return undefined;
      const t = now();
      const leaseUntil = t + leaseMs;
      const { journal: _journal, retryingUntil: _retrying, cancelRequested: _cancel, result: _result, ...record } = run;
      // The same atomic take-over as a caller retrying the run id: one runner wins, the others see it busy.
      const created = await bounded('create', t + STORE_WAIT_MS, () =>
        store.create({ ...record, owner, leaseUntil }, t),
      );
      if (created.status !== 'taken') return undefined;
      return resumeStored(
        { ...created.run, cancelRequested: reason === undefined ? {} : { reason } },
        run.owner,
        leaseUntil,
        chain,
      );
    },

    async cancelWaiting(run, reason) {
      const chain = parts.chains.get(run.chain);
      if (!chain || chain.fingerprint !== run.fingerprint) {
        throw new TypeError(
          `Run ${run.runId} is waiting, and this runner cannot continue it to undo its steps: ` +
            `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
        );
      }
      const step = (run.result as Extract<RunResult, { status: 'waiting' }> | undefined)?.waiting.step ?? '';
      const error = toErrorInfo(
        {
          category: 'cancelled',
          code: 'run_cancelled',
          message: `The run was cancelled${reason ? `: ${reason}` : ''} while it waited at step ${step}.`,
        },
        { step },
        calls.retryTable,
      );
      return takeWaiting(run, chain, step, error);
    },

    async signal(runId, name, payload) {
      checkRunId(runId);
      if (typeof name !== 'string' || name === '')
        throw new TypeError('Expected the signal name as a non-empty string.');
      if (!store.takeParked)
        throw new TypeError(
          'Signals need a run store with takeParked(): memoryRunStore(), redisStores(...) or postgresStores(...).',
        );
      const run = await bounded('get', now() + STORE_WAIT_MS, () => store.get(runId));
      if (!run) return 'not_found';
      if (run.status !== 'waiting') return 'not_waiting';
      const chain = parts.chains.get(run.chain);
      if (!chain || chain.fingerprint !== run.fingerprint) {
        throw new TypeError(
          `Run ${runId} waits for a signal, and this runner cannot continue it: ` +
            `give it chain '${run.chain}' (the same definition) in \`chains\`.`,
        );
      }
      const waiting = (run.result as Extract<RunResult, { status: 'waiting' }> | undefined)?.waiting;
      const t = now();
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
      encodeRunValue(entry); // a payload the journal cannot keep is refused before the take
      const update = { leaseUntil: t + leaseMs, deadlineAt: t + chain.timeoutMs };
      if (!(await bounded('take', t + STORE_WAIT_MS, () => store.takeParked!(runId, owner, 'waiting', update, entry))))
        return 'not_waiting';
      leases.hold(runId, update.leaseUntil);
      const exec = continuation({ ...run, journal: [...run.journal, entry] }, chain);
      const ran = own(exec, update.deadlineAt, false, update.leaseUntil);
      parts.recorder.signalReceived(runId, waiting!.step, name);
      return ran;
    },
  };

  if (store.markRetrying)
    parts.recorder.retryWait = retryWaits(
      store.markRetrying.bind(store),
      owner,
      now,
      (runId) => leases.get(runId) !== undefined,
      bounded,
      warn,
    );

  if (options.recover) {
    // Background recovery never overlaps its own claims and never keeps the process alive; the runs
    // it claims go on by themselves, so one slow run never delays picking up the others.
    poll = setInterval(() => {
      if (polling || closed) return;
      polling = true;
      claimAndStart()
        .then(
          (started) => {
            for (const p of started) p.catch((error: unknown) => warn(error, 'a recovered run failed'));
          },
          (error: unknown) => warn(error, 'recovery poll failed'),
        )
        .finally(() => (polling = false));
    }, options.recover.intervalMs);
    poll.unref?.();
  }
  return durable;
}

/** The trace entry of a compensation's start (it names no step). */
const COMPENSATION_TRACE: TraceStep = Object.freeze({
  stepNumber: 0,
  id: '',
  status: 'error',
  attempts: 0,
  latencyMs: 0,
  startedAt: new Date(0).toISOString(),
}) as TraceStep;
/** How long past its deadline a run no runner here can continue waits for one that can, before any ends it. */
const ORPHAN_GRACE_MS = 60_000;

/**
 * Waits shorter than this are not shown as `retrying`: marking and unmarking cost two store writes
 * (about a millisecond each, under 0.2 % of a wait this long), and a shorter wait is over before
 * anyone listing runs would see it.
 */
const RETRYING_MIN_MS = 1_000;

/**
 * The runner's hook for retry waits of the durable runs it owns: a wait of at least
 * {@link RETRYING_MIN_MS} marks its run `retrying` in the store (in the background, beside the wait)
 * and unmarks it when the last wait of the run ends; the writes of one run go in order.
 *
 * @example
 * ```ts
 * parts.recorder.retryWait = retryWaits(
 *   store.markRetrying.bind(store),
 *   owner,
 *   Date.now,
 *   (id) => leases.get(id) !== undefined,
 *   bounded,
 *   warn,
 * );
 * ```
 */
function retryWaits(
  mark: NonNullable<RunStore['markRetrying']>,
  owner: string,
  now: () => number,
  owns: (runId: string) => boolean,
  bounded: <T>(what: string, until: number, fn: () => Promise<T>) => Promise<T>,
  warn: (error: unknown, what: string) => void,
): (runId: string, delayMs: number) => (() => void) | undefined {
  const waits = new Map<string, { n: number; until: number; tail: Promise<void> }>();
  const enqueue = (runId: string, w: { n: number; until: number; tail: Promise<void> }, until: number | null): void => {
    const next = w.tail
      .then(() => bounded('retrying', now() + STORE_WAIT_MS, () => mark(runId, owner, until)))
      .then(
        () => undefined,
        (error: unknown) => warn(error, `could not record the retry wait of run ${runId}`),
      );
    w.tail = next;
    void next.then(() => {
      if (w.tail === next && w.n === 0) waits.delete(runId);
    });
  };
  return (runId, delayMs) => {
    if (delayMs < RETRYING_MIN_MS || !owns(runId)) return undefined;
    let w = waits.get(runId);
    if (!w) waits.set(runId, (w = { n: 0, until: 0, tail: Promise.resolve() }));
    const held = w;
    held.n++;
    const until = now() + delayMs;
    if (until > held.until) {
      held.until = until;
      enqueue(runId, held, until);
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--held.n > 0) return;
      held.until = 0;
      enqueue(runId, held, null);
    };
  };
}

/** The trace entries of a stored run's journaled steps, oldest first. */
function priorTraceOf(run: StoredRun): TraceStep[] {
  const out: TraceStep[] = [];
  for (const e of run.journal)
    if (e.compensation === undefined && e.started === undefined && e.decision === undefined && e.trace)
      out.push(e.trace);
  return out;
}

/** The trace entry of step `id` (`nap`, or inside sub-chains `done/3/nap`), among `steps` and their children. */
function traceOf(steps: readonly TraceStep[], id: string): TraceStep | undefined {
  for (const t of steps) {
    if (t.id === id) return t;
    if (t.children && id.startsWith(`${t.id}/`)) {
      const found = traceOf(t.children, id);
      if (found) return found;
    }
  }
  return undefined;
}
