// Durable runs (docs/guides/durable-runs.md): with `stores.runs`, a run is recorded before its first
// step, each step journaled before a step that depends on it starts, the result recorded at the end.
// The owner renews its leases with one timer; `recover()` continues runs whose owner died.
import type { Chain } from '../define/chain.js';
import { ToolFailure } from '../errors/classify.js';
import { listening, safeEmit } from '../observe/events.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { callStore } from '../stores/guard.js';
import type { JournalEntry, RunRecord, RunStatus, RunStore, StoredRun } from '../stores/types.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import { earlyFailure, earlyResult } from './early-result.js';
import type { Execution } from './execution.js';
import { runEndData } from './events-log.js';
import { execute } from './executor.js';
import { newId } from './ids.js';
import type { RunnerParts } from './parts.js';

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
}

/** Default lease: how long an owner's silence counts as its death. */
export const DEFAULT_LEASE_MS = 30_000;
/** How long an ended run's result is kept for callers retrying its run id (at least the gate's TTL). */
const RETENTION_MS = 24 * 3_600_000;
/** Runs claimed per `recover()` call. */
const DEFAULT_RECOVER_LIMIT = 100;

/**
 * Which steps a chain journals when. A `select` is never journaled: it is a declarative filter of
 * results that are, so a recovered run recomputes it (a store round trip saved per select). A step
 * no other step depends on is journaled with the run's end, in the same write: nothing waits for it,
 * and if the process dies first, recovery runs it again under the same idempotency key.
 */
interface JournalPlan {
  readonly skip: ReadonlySet<string>;
  readonly atEnd: ReadonlySet<string>;
}
const journalPlans = new WeakMap<Chain, JournalPlan>();
function journalPlan(chain: Chain): JournalPlan {
  let plan = journalPlans.get(chain);
  if (!plan) {
    const needed = new Set<number>();
    for (const step of chain.plan) for (const d of step.deps) needed.add(d);
    const skip = new Set<string>();
    const atEnd = new Set<string>();
    for (const step of chain.plan) {
      if (step.kind === 'select') skip.add(step.id);
      else if (!needed.has(step.index)) atEnd.add(step.id);
    }
    journalPlans.set(chain, (plan = { skip, atEnd }));
  }
  return plan;
}

/** The durable side of a runner; absent without `stores.runs` (the memory path pays nothing). */
export interface Durable {
  /** Records a fresh run and runs it, or answers for the run id's existing record. */
  run(exec: Execution): Promise<RunResult>;
  /** Continues a run approved at its gate, durably. */
  resume(exec: Execution): Promise<RunResult>;
  /** Claims runs whose owner died and continues them; resolves with their results. */
  recover(): Promise<RunResult[]>;
  /** The stored run, or `undefined`. */
  info(runId: string): Promise<RunInfo | undefined>;
  /** Stops polling and renewing: runs in flight stay recorded, for another instance to recover. */
  close(): void;
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
export function durableRuns(parts: RunnerParts, store: RunStore, options: { leaseMs?: number; recover?: { intervalMs: number; limit?: number } }): Durable {
  const { calls, events, logger } = parts;
  const now = calls.now;
  const owner = newId();
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const retentionMs = Math.max(RETENTION_MS, parts.gates.confirmationTtlMs);
  const owned = new Set<string>();
  let renewal: ReturnType<typeof setInterval> | undefined;
  let poll: ReturnType<typeof setInterval> | undefined;
  let polling = false;
  let closed = false;

  const warn = (error: unknown, what: string): void => logger?.warn({ err: error, owner }, `durable runs: ${what}`);
  /** A run-store call bounded by STORE_WAIT_MS and `until`; failures are `store_unavailable`. */
  const bounded = <T>(what: string, until: number, fn: () => Promise<T>): Promise<T> => {
    const t = now();
    return Promise.resolve(callStore(fn, Math.min(t + STORE_WAIT_MS, Math.max(until, t + 1)), now, `run (${what})`));
  };
  const hold = (runId: string): void => {
    owned.add(runId);
    // One timer per runner renews every lease it holds in one store call, a third of a lease apart.
    if (renewal === undefined && !closed) {
      renewal = setInterval(() => {
        if (owned.size > 0) store.renew(owner, [...owned], now() + leaseMs).catch((error: unknown) => warn(error, 'lease renewal failed'));
      }, Math.max(1, Math.floor(leaseMs / 3)));
      renewal.unref?.();
    }
  };
  const release = (runId: string): void => {
    owned.delete(runId);
    if (owned.size === 0 && renewal !== undefined) {
      clearInterval(renewal);
      renewal = undefined;
    }
  };

  /** Runs `exec` as a durable run this runner owns: journal each step, record the end. */
  const own = (exec: Execution, deadlineAt: number, recovered: boolean): Promise<RunResult> => {
    const { runId } = exec;
    const plan = journalPlan(exec.chain);
    const atEnd: JournalEntry[] = [];
    let interrupted = false;
    hold(runId);
    const events = parts.recorder.runEvents;
    const cancelled = events?.open(runId).cancelled;
    if (cancelled) exec.signal = exec.signal ? AbortSignal.any([exec.signal, cancelled]) : cancelled;
    exec.deadlineAt = deadlineAt;
    exec.durable = { runId, owner, takeOver: true };
    exec.interrupted = () => interrupted;
    exec.journal = (entry: JournalEntry) => {
      if (plan.skip.has(entry.step)) return true;
      if (plan.atEnd.has(entry.step)) return void atEnd.push(entry);
      return write(entry);
    };
    const write = async (entry: JournalEntry): Promise<void> => {
      let kept: boolean;
      try {
        kept = await bounded('journal', deadlineAt, () => store.journal(runId, owner, entry));
      } catch (error) {
        interrupted = true;
        throw error;
      }
      if (!kept) {
        interrupted = true;
        throw new ToolFailure({ category: 'conflict', code: 'lease_lost', message: `Run ${runId} was taken over by another runner (this runner's lease expired); it stopped here.` });
      }
    };
    exec.onEnd = async (result: RunResult) => {
      release(runId);
      // A run cut off by close(), a failed store or a lost lease has not ended: its next owner ends it.
      if (interrupted || (result.status === 'failed' && result.error.code === 'runner_closed')) return events?.close(runId, undefined, undefined);
      let recorded = false;
      try {
        recorded = await bounded('finish', now() + STORE_WAIT_MS, () => store.finish(runId, owner, result.status, result, retentionMs, atEnd));
      } catch (error) {
        warn(error, `could not record the end of run ${runId}`);
      }
      // Steps journaled with the end are done only once it is recorded: otherwise the run stays in
      // flight (its next owner finishes it from the journal) and this caller is told so.
      await events?.close(runId, recorded ? runEndData(result, (v) => parts.recorder.redacted(v)) : undefined, recorded ? retentionMs : undefined);
      if (!recorded && atEnd.length > 0) return unrecorded(result);
      safeRunEnd(result, recovered);
    };
    return execute(parts, exec);
  };

  const unrecorded = (result: RunResult): RunResult => {
    const body = earlyFailure(calls, 'unavailable', 'store_unavailable', `Run ${result.runId} ran to its end, but the run store did not record it; a runner will finish it from its journal.`);
    result.trace.status = 'failed';
    return { ...body, runId: result.runId, chain: result.chain, trace: result.trace, metadata: result.metadata };
  };

  const safeRunEnd = (result: RunResult, recovered: boolean): void => {
    if (!listening(events, 'run:end')) return;
    safeEmit(events, 'run:end', { runId: result.runId, traceId: result.trace.traceId, chain: result.chain, ...(result.trace.sessionId !== undefined && { sessionId: result.trace.sessionId }), status: result.status, recovered, result });
  };

  /** Continues a stored run (taken over or claimed) from its journal; a changed chain cannot continue. */
  const resumeStored = (run: StoredRun, previousOwner: string, given?: Chain): Promise<RunResult> => {
    const chain = given ?? parts.chains.get(run.chain);
    if (!chain || chain.fingerprint !== run.fingerprint) {
      release(run.runId);
      const why = chain ? `Chain ${run.chain} changed since the run started; it cannot be continued.` : `This runner has no chain named '${run.chain}' to continue run ${run.runId}.`;
      const result = earlyResult(parts, { chain: run.chain, runId: run.runId, traceId: run.traceId, sessionId: run.sessionId, startedAt: run.startedAt, priorTrace: run.journal.map((e) => e.trace) }, earlyFailure(calls, 'internal', chain ? 'chain_changed' : 'unknown_chain', why));
      return bounded('finish', now() + STORE_WAIT_MS, () => store.finish(run.runId, owner, 'failed', result, retentionMs)).then(() => result, (error: unknown) => {
        warn(error, `could not record the end of run ${run.runId}`);
        return result;
      });
    }
    if (listening(events, 'run:recovered')) {
      safeEmit(events, 'run:recovered', { runId: run.runId, traceId: run.traceId, chain: run.chain, ...(run.sessionId !== undefined && { sessionId: run.sessionId }), previousOwner, owner, journaled: run.journal.map((e) => e.step) });
    }
    return own(continuation(run, chain), run.deadlineAt, true);
  };

  const durable: Durable = {
    async run(exec) {
      const deadlineAt = exec.startedAt + exec.chain.timeoutMs;
      const record: RunRecord = {
        v: 1, runId: exec.runId, traceId: exec.traceId, chain: exec.chain.name, fingerprint: exec.chain.fingerprint,
        ...(exec.sessionId !== undefined && { sessionId: exec.sessionId }),
        input: exec.input, context: exec.context, startedAt: exec.startedAt, deadlineAt,
        status: 'running', owner, leaseUntil: now() + leaseMs,
      };
      const site = { chain: exec.chain.name, runId: exec.runId, traceId: exec.traceId, sessionId: exec.sessionId, definition: exec.chain, startedAt: exec.startedAt };
      let created;
      try {
        created = await bounded('create', deadlineAt, () => store.create(record, now()));
      } catch (error) {
        return earlyResult(parts, site, earlyFailure(calls, 'unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)));
      }
      switch (created.status) {
        case 'created': return own(exec, deadlineAt, false);
        case 'ended': return created.run.result as RunResult; // the caller's retry: the recorded result, no tool called
        case 'busy': return earlyResult(parts, site, earlyFailure(calls, 'conflict', 'run_in_progress', `Run ${exec.runId} is in flight on another runner; try again later, or use a new run id.`));
        case 'taken': return resumeStored(created.run, created.run.owner, exec.chain);
      }
    },

    async resume(exec) {
      const deadlineAt = exec.deadlineAt ?? (exec.segmentStart ?? now()) + exec.chain.timeoutMs;
      try {
        const reopened = await bounded('reopen', deadlineAt, () => store.reopen(exec.runId, owner, { leaseUntil: now() + leaseMs, approvedGate: exec.approvedGate!, deadlineAt }));
        // Parked before the run store was configured (or its record expired): record it now.
        if (!reopened) {
          const created = await bounded('create', deadlineAt, () => store.create({
            v: 1, runId: exec.runId, traceId: exec.traceId, chain: exec.chain.name, fingerprint: exec.chain.fingerprint,
            ...(exec.sessionId !== undefined && { sessionId: exec.sessionId }), input: exec.input, context: exec.context, startedAt: exec.startedAt, deadlineAt,
            status: 'running', owner, leaseUntil: now() + leaseMs, ...(exec.approvedGate !== undefined && { approvedGate: exec.approvedGate }),
          }, now()));
          if (created.status !== 'created') return earlyResult(parts, { chain: exec.chain.name, runId: exec.runId, traceId: exec.traceId, sessionId: exec.sessionId, definition: exec.chain }, earlyFailure(calls, 'conflict', 'run_in_progress', `Run ${exec.runId} is recorded as ${created.run.status} elsewhere; it cannot be resumed here.`));
        }
      } catch (error) {
        return earlyResult(parts, { chain: exec.chain.name, runId: exec.runId, traceId: exec.traceId, sessionId: exec.sessionId, definition: exec.chain }, earlyFailure(calls, 'unavailable', 'store_unavailable', error instanceof Error ? error.message : String(error)));
      }
      return own(exec, deadlineAt, false);
    },

    async recover() {
      if (closed) return [];
      const t = now();
      const claimed = await bounded('claim', t + STORE_WAIT_MS, () => store.claimExpired(owner, t, t + leaseMs, options.recover?.limit ?? DEFAULT_RECOVER_LIMIT));
      for (const run of claimed) hold(run.runId);
      return Promise.all(claimed.map((run) => resumeStored(run, run.owner === owner ? '' : run.owner)));
    },

    async info(runId) {
      const run = await bounded('get', now() + STORE_WAIT_MS, () => store.get(runId));
      if (!run) return undefined;
      return {
        runId: run.runId, chain: run.chain, status: run.status, owner: run.owner, leaseUntil: run.leaseUntil, steps: run.journal.map((e) => e.step),
        ...(run.result !== undefined && { result: run.result as RunResult }),
      };
    },

    close() {
      closed = true;
      if (poll !== undefined) clearInterval(poll);
      if (renewal !== undefined) clearInterval(renewal);
      poll = renewal = undefined;
      owned.clear();
    },
  };

  if (options.recover) {
    // Background recovery never overlaps itself and never keeps the process alive.
    poll = setInterval(() => {
      if (polling) return;
      polling = true;
      durable.recover().catch((error: unknown) => warn(error, 'recovery poll failed')).finally(() => (polling = false));
    }, options.recover.intervalMs);
    poll.unref?.();
  }
  return durable;
}

/** The execution that continues a stored run from its journal: journaled steps are done, not called again. */
export function continuation(run: StoredRun, chain: Chain): Execution {
  const results = Object.create(null) as Record<string, unknown>;
  const done: string[] = [];
  const priorTrace: TraceStep[] = [];
  for (const entry of run.journal) {
    done.push(entry.step);
    if (entry.skipped !== true) results[entry.step] = entry.value;
    priorTrace.push(entry.trace);
  }
  return {
    chain, runId: run.runId, traceId: run.traceId, input: run.input, context: (run.context ?? {}) as Record<string, unknown>,
    results, done, priorTrace, startedAt: run.startedAt, resumed: true,
    ...(run.sessionId !== undefined && { sessionId: run.sessionId }),
    ...(run.approvedGate !== undefined && { approvedGate: run.approvedGate }),
  };
}
