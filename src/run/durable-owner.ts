// What every part of the durable side shares (docs/ARCHITECTURE.md "Durable runs"): one owner id, the
// run store, the lease keeper, the fenced calls, and the small rules (store calls bounded, how long an
// ended run is kept, the early results it answers with).
import type { Chain } from '../define/chain.js';
import { ToolFailure } from '../errors/failure.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import { callStore } from '../stores/guard.js';
import type { RunStore, StoredRun } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';
import type { Calls } from './call-context.js';
import { earlyFailure, earlyResult } from './early-result.js';
import { runEndData } from './events-log.js';
import type { Execution } from './execution.js';
import { newId } from './ids.js';
import { LeaseKeeper } from './lease.js';
import type { RunnerParts } from './parts.js';

/** Default lease: how long an owner's silence counts as its death. */
const DEFAULT_LEASE_MS = 30_000;
/**
 * Default retention of an ended run (`retention.completedMs`,
 * `retention.failedMs`): its result kept for callers retrying its run id.
 */
const RETENTION_MS = 24 * 3_600_000;

/** The options of a runner's durable side (from `createRunner`). */
export interface DurableOptions {
  leaseMs?: number;
  recover?: { intervalMs: number; limit?: number };
  retention?: { completedMs?: number; failedMs?: number };
}

/**
 * One runner's durable state: its owner id, store and leases, with the rules every durable
 * operation shares. The parts of the durable side (`durable-*.ts`) are functions of it.
 *
 * @example
 * ```ts
 * const o = new DurableOwner(parts, stores.runs, { leaseMs: 30_000 });
 * const run = await o.bounded('get', o.now() + 5_000, () => o.store.get(runId));
 * ```
 */
export class DurableOwner {
  readonly owner = newId();
  readonly leaseMs: number;
  readonly now: () => number;
  /** The runner's calls, unfenced: retry table, clock, early failures. */
  readonly calls: Calls;
  readonly leases: LeaseKeeper;
  /** The runner's parts with fenced calls: what durable runs execute with. */
  readonly fencedParts: RunnerParts;
  /** Set by `close()`: no more recovery, no take-over of expired runs. */
  closed = false;
  private readonly completedMs: number;
  private readonly failedMs: number;

  constructor(
    readonly parts: RunnerParts,
    readonly store: RunStore,
    readonly options: DurableOptions,
  ) {
    this.calls = parts.calls;
    this.now = parts.calls.now;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.completedMs = options.retention?.completedMs ?? RETENTION_MS;
    this.failedMs = options.retention?.failedMs ?? RETENTION_MS;
    const leases = new LeaseKeeper(store, this.owner, this.leaseMs, this.now, this.bounded, this.warn);
    this.leases = leases;
    const { calls } = parts;
    const leaseLost = (runId: string): ToolFailure => this.leaseLost(runId);
    // Every tool call and undo of a durable run passes its lease's fence first.
    const fenced: Calls = {
      ...calls,
      call(ctx) {
        const open = leases.fence(ctx.runId);
        if (open === true) return calls.call(ctx);
        const refused = (): Promise<never> => Promise.reject(leases.get(ctx.runId)?.failed ?? leaseLost(ctx.runId));
        return open === false ? refused() : open.then((yes) => (yes ? calls.call(ctx) : refused()));
      },
    };
    this.fencedParts = { ...parts, calls: fenced };
  }

  /** A run-store call bounded by STORE_WAIT_MS and `until`; failures are `store_unavailable`. */
  // Arrow functions, so the lease keeper and the retry waits can be handed them unbound.
  readonly bounded = <T>(what: string, until: number, fn: () => Promise<T>): Promise<T> => {
    const t = this.now();
    return Promise.resolve(
      callStore(fn, Math.min(t + STORE_WAIT_MS, Math.max(until, t + 1)), this.now, `run (${what})`),
    );
  };

  readonly warn = (error: unknown, what: string): void => {
    this.parts.logger?.warn({ err: error, owner: this.owner }, `durable runs: ${what}`);
  };

  /**
   * How long the store keeps a run that ended (or parked) so, and its events: its kind's retention; a
   * run at a gate, its token's; a run waiting or in doubt, until it is taken (`Infinity`).
   */
  keepFor(status: RunResult['status']): number {
    return status === 'failed'
      ? this.failedMs
      : status === 'awaiting_confirmation'
        ? this.parts.gates.confirmationTtlMs
        : status === 'waiting' || status === 'in_doubt'
          ? Infinity
          : this.completedMs;
  }

  leaseLost(runId: string): ToolFailure {
    return new ToolFailure({
      category: 'conflict',
      code: 'lease_lost',
      message: `Run ${runId} was taken over by another runner (this runner's lease expired); it stopped here.`,
    });
  }

  /** The definition here of a stored run's chain, if it is the one the run was recorded with. */
  chainOf(run: StoredRun): Chain | undefined {
    const chain = this.parts.chains.get(run.chain);
    return chain && chain.fingerprint === run.fingerprint ? chain : undefined;
  }

  /**
   * The answer to a run this runner cannot start: `run_in_progress`, `run_id_taken`, `store_unavailable`, or
   * `runner_closed` (closed while the store answered: the run stays recorded in flight, for recovery elsewhere).
   */
  refuse(exec: Execution, code: string, message: string): RunResult {
    return earlyResult(
      this.parts,
      {
        chain: exec.chain.name,
        runId: exec.runId,
        traceId: exec.traceId,
        sessionId: exec.sessionId,
        definition: exec.chain,
        startedAt: exec.startedAt,
      },
      earlyFailure(
        this.calls,
        code === 'store_unavailable' ? 'unavailable' : code === 'runner_closed' ? 'cancelled' : 'conflict',
        code,
        message,
      ),
    );
  }

  /** Announces the end of a run that ended outside a segment (declined, in doubt) to its watchers and listeners. */
  async ended(result: RunResult, recovered: boolean, until: number): Promise<void> {
    const events = this.parts.recorder.runEvents;
    if (events) {
      events.open(result.runId);
      await events.close(
        result.runId,
        runEndData(result, (v) => this.parts.recorder.redacted(v)),
        this.keepFor(result.status),
        until,
      );
    }
    this.parts.recorder.durableRunEnded(result, recovered);
  }
}

/** The trace entries of a stored run's journaled steps, oldest first. */
export function priorTraceOf(run: StoredRun): TraceStep[] {
  const out: TraceStep[] = [];
  for (const e of run.journal)
    if (e.compensation === undefined && e.started === undefined && e.decision === undefined && e.trace)
      out.push(e.trace);
  return out;
}
