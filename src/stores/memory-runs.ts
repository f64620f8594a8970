// A run store in memory: one process only (tests, single-process apps), with the same contract and
// the same codec as the Redis and Postgres stores, so it keeps and refuses the same values.
import { memoryEventLog } from './memory-events.js';
import { checkOptions, integer } from '../define/options.js';
import { z } from 'zod';
import { encodeRunValue, parkedStep, storedRun } from './run-codec.js';
import { isAfter, newestFirst, steered, summarize } from './run-list.js';
import { contextMatches } from './run-listing.js';
import type { RunStore } from './run-store.js';
import type { IdempotencyStore } from './types.js';
import type { ClaimFilter, CreateRunResult, RunRecord, StoredRun } from './run-store.js';
import type { RunStatus, RunSummary } from './run-listing.js';

/** Options of {@link memoryRunStore}. */
export interface MemoryRunStoreOptions {
  /**
   * The idempotency store that `journal(…, complete)` keeps results in (the one the runner uses).
   * Without it, a journal write that carries a result to keep is refused.
   */
  idempotency?: IdempotencyStore;
  /**
   * Ended runs (and runs parked at a gate) kept at most; the oldest go first. Runs in flight, waiting
   * or in doubt are never evicted to make room. Default 10 000.
   */
  maxEnded?: number;
  /** Clock for retention. Default `Date.now`. */
  now?: () => number;
  /** Events kept per run for `runner.watch` (a ring: the oldest go first). Default 10 000. */
  maxEventsPerRun?: number;
}

interface MemoryRun {
  record: string; // encoded as created
  chain: string;
  fingerprint: string;
  contextHash: string | undefined;
  status: RunStatus;
  owner: string;
  leaseUntil: number;
  deadlineAt: number;
  approvedGate?: string;
  result?: string; // encoded
  parked?: string; // the step a run waiting or in doubt is parked at (takeParked's `seen`)
  journal: string[]; // encoded entries, oldest first
  expiresAt: number; // retention of an ended or parked run; Infinity while running
  startedAt: number;
  endedAt?: number;
  /** While `running`: waiting out a retry until then (markRetrying). */
  retryUntil?: number;
  /** While `running`: cancelled by requestCancel, with this reason ('' for none). */
  cancelReason?: string;
  /** While `waiting`: when dueWaiting lists it (absent: only a signal takes it). */
  wakeAt?: number;
}

const RUN_STORE_OPTIONS = z.object(
  { maxEnded: integer('maxEnded', 1).optional(), maxEventsPerRun: integer('maxEventsPerRun', 1).optional() },
  { error: 'Expected memoryRunStore options to be an object.' },
);

/**
 * A run store in memory: durable across runners of one process, not across a crash. Every write is
 * encoded (so it refuses what the Redis and Postgres stores refuse) and every read is a fresh copy.
 * Runs in flight, waiting or in doubt are kept until they end; ended ones and runs parked at a gate for
 * their retention, at most `maxEnded`.
 *
 * @example
 * ```ts
 * import { memoryIdempotencyStore, memoryRunStore } from 'chainkit';
 * const idempotency = memoryIdempotencyStore();
 * const runner = createRunner({ invoker, chains, stores: { idempotency, runs: memoryRunStore({ idempotency }) } });
 * ```
 */
export function memoryRunStore(options: MemoryRunStoreOptions = {}): RunStore {
  const maxEnded = options.maxEnded ?? 10_000;
  checkOptions('memoryRunStore options', RUN_STORE_OPTIONS, options);
  const now = options.now ?? Date.now;
  const idempotency = options.idempotency;
  const runs = new Map<string, MemoryRun>();
  const ended = new Map<string, true>(); // ids of ended and parked runs, in the order they ended

  const live = (runId: string): MemoryRun | undefined => {
    const run = runs.get(runId);
    if (run && run.expiresAt <= now()) {
      runs.delete(runId);
      ended.delete(runId);
      return undefined;
    }
    return run;
  };
  const view = (runId: string, run: MemoryRun): StoredRun =>
    steered(storedRun(run.record, run, run.journal), run.retryUntil, run.cancelReason);
  // Retentions are usually equal, so end order is expiry order: drop expired ones from the front, then the excess.
  const trim = (): void => {
    const t = now();
    for (const id of ended.keys()) {
      const run = runs.get(id);
      if (run && run.expiresAt > t && ended.size <= maxEnded) break;
      ended.delete(id);
      if (run && run.status !== 'running') runs.delete(id);
    }
  };
  const owns = (run: MemoryRun | undefined, owner: string): run is MemoryRun =>
    run !== undefined && run.status === 'running' && run.owner === owner;
  const claimable = (run: MemoryRun, only: ClaimFilter | undefined): boolean =>
    only === undefined ||
    only.chains.some((c) => c.name === run.chain && c.fingerprint === run.fingerprint) ||
    (only.orphanedBefore !== undefined && run.deadlineAt < only.orphanedBefore);

  const events = memoryEventLog({
    now,
    maxEnded,
    ...(options.maxEventsPerRun !== undefined && { maxEventsPerRun: options.maxEventsPerRun }),
  });

  return {
    ...(idempotency && { idempotency }),
    events,
    async create(record, at): Promise<CreateRunResult> {
      const encoded = encodeRunValue(record); // refuses what it cannot keep, before anything is stored
      const run = live(record.runId);
      if (!run) {
        runs.set(record.runId, {
          record: encoded,
          chain: record.chain,
          fingerprint: record.fingerprint,
          contextHash: record.contextHash,
          status: 'running',
          owner: record.owner,
          leaseUntil: record.leaseUntil,
          deadlineAt: record.deadlineAt,
          journal: [],
          expiresAt: Infinity,
          startedAt: record.startedAt,
        });
        return { status: 'created' };
      }
      if (!boundTo(run, record)) return { status: 'mismatch' };
      if (run.status !== 'running') return { status: 'ended', run: view(record.runId, run) };
      if (run.leaseUntil >= at || run.fingerprint !== record.fingerprint)
        return { status: 'busy', run: view(record.runId, run) };
      const previousOwner = run.owner;
      run.owner = record.owner;
      run.leaseUntil = record.leaseUntil;
      delete run.retryUntil; // the old owner's wait is over
      return { status: 'taken', run: { ...view(record.runId, run), previousOwner } };
    },
    async journal(runId, owner, entries, complete) {
      if (complete && !idempotency)
        throw new Error('This memory run store keeps no idempotency results: pass `idempotency` to memoryRunStore().');
      const encoded = entries.map(encodeRunValue);
      // The call happened: its result is kept even when this owner has lost the run (a re-run then finds it done).
      if (complete) await idempotency!.complete(complete.key, complete.value, complete.ttlMs);
      const run = live(runId);
      if (!owns(run, owner)) return false;
      run.journal.push(...encoded);
      return true;
    },
    async renew(owner, runIds, leaseUntil) {
      const renewed: string[] = [];
      for (const runId of runIds) {
        const run = live(runId);
        if (!owns(run, owner)) continue;
        run.leaseUntil = leaseUntil;
        renewed.push(runId);
      }
      return renewed;
    },
    async finish(runId, owner, status, result, retentionMs, entries = []) {
      const encoded = encodeRunValue(result);
      const journaled = entries.map((e) => encodeRunValue(e));
      const run = live(runId);
      if (!owns(run, owner)) return false;
      run.journal.push(...journaled);
      run.status = status;
      run.result = encoded;
      run.parked = parkedStep(status, result);
      run.leaseUntil = 0;
      delete run.retryUntil;
      run.expiresAt = now() + retentionMs;
      run.endedAt = now();
      ended.delete(runId);
      // A run in doubt waits for a decision, as a waiting run for its signal: neither is evicted to make room.
      if (status !== 'in_doubt') ended.set(runId, true);
      trim();
      return true;
    },
    async reopen(runId, owner, update) {
      const run = live(runId);
      if (!run || run.status !== 'awaiting_confirmation') return false;
      Object.assign(run, {
        status: 'running',
        owner,
        leaseUntil: update.leaseUntil,
        approvedGate: update.approvedGate,
        deadlineAt: update.deadlineAt,
        expiresAt: Infinity,
      });
      delete run.result;
      delete run.endedAt;
      ended.delete(runId);
      return true;
    },
    async claimExpired(owner, at, leaseUntil, limit, only) {
      const claimed: StoredRun[] = [];
      for (const [runId, run] of runs) {
        if (claimed.length >= limit) break;
        if (run.status !== 'running' || run.leaseUntil >= at || !claimable(run, only)) continue;
        const previousOwner = run.owner;
        run.owner = owner;
        run.leaseUntil = leaseUntil;
        delete run.retryUntil; // the old owner's wait is over
        claimed.push({ ...view(runId, run), previousOwner });
      }
      return claimed;
    },
    async get(runId) {
      const run = live(runId);
      return run && view(runId, run);
    },
    listsByContext: true,
    // One pass over what this store holds, which maxEnded bounds (plus the runs in flight).
    async listRuns(query) {
      const t = now();
      const matched: RunSummary[] = [];
      for (const [runId, run] of runs) {
        const status = run.status === 'running' && run.retryUntil !== undefined ? 'retrying' : run.status;
        if (
          run.expiresAt <= t ||
          !query.statuses.includes(status) ||
          (query.chain !== undefined && run.chain !== query.chain) ||
          (query.contexts !== undefined && !query.contexts.some((m) => contextMatches(m, run.contextHash, run.chain)))
        )
          continue;
        if (
          run.startedAt < query.since ||
          run.startedAt >= query.until ||
          !isAfter({ startedAt: run.startedAt, runId }, query.after)
        )
          continue;
        matched.push({ runId, chain: run.chain, status, startedAt: run.startedAt, steps: 0 });
      }
      matched.sort(newestFirst);
      const page = matched.slice(0, query.limit).map((m) => {
        const run = runs.get(m.runId)!;
        return summarize({ ...m, endedAt: run.endedAt }, run.result, run.journal);
      });
      return { runs: page, more: matched.length > query.limit };
    },
    async markRetrying(runId, owner, until) {
      const run = live(runId);
      if (!owns(run, owner)) return false;
      if (until === null) delete run.retryUntil;
      else run.retryUntil = until;
      return true;
    },
    async requestCancel(runId, reason) {
      const run = live(runId);
      if (!run || run.status !== 'running') return false;
      run.cancelReason = reason ?? '';
      return true;
    },
    async takeParked(runId, owner, from, update, entry, seen) {
      const encoded = entry && encodeRunValue(entry);
      const run = live(runId);
      if (!run || run.status === 'running' || run.status !== from) return false;
      if (seen && (run.journal.length !== seen.journal || run.parked !== seen.step)) return false;
      Object.assign(run, {
        status: 'running',
        owner,
        leaseUntil: update.leaseUntil,
        deadlineAt: update.deadlineAt,
        expiresAt: Infinity,
      });
      delete run.result;
      delete run.parked;
      delete run.endedAt;
      ended.delete(runId);
      if (encoded !== undefined) run.journal.push(encoded);
      delete run.wakeAt;
      return true;
    },
    async parkWaiting(runId, owner, result, wakeAt, entries = []) {
      const encoded = encodeRunValue(result);
      const journaled = entries.map((e) => encodeRunValue(e));
      const run = live(runId);
      if (!owns(run, owner)) return false;
      run.journal.push(...journaled);
      Object.assign(run, {
        status: 'waiting',
        result: encoded,
        parked: parkedStep('waiting', result),
        leaseUntil: 0,
        expiresAt: Infinity,
      });
      delete run.retryUntil;
      if (wakeAt === null) delete run.wakeAt;
      else run.wakeAt = wakeAt;
      return true;
    },
    // One pass over the runs held (a test and single-process store; the others keep an index).
    async dueWaiting(at, limit, only) {
      const due: [number, string][] = [];
      for (const [runId, run] of runs) {
        if (
          run.status === 'waiting' &&
          run.wakeAt !== undefined &&
          run.wakeAt <= at &&
          claimable(run, only && { chains: only.chains })
        )
          due.push([run.wakeAt, runId]);
      }
      return due
        .sort((a, b) => a[0] - b[0])
        .slice(0, Math.max(0, limit))
        .map(([, id]) => id);
    },
  };
}

/** Whether a run id's record belongs to the caller's chain and context (a record without a hash predates binding). */
function boundTo(run: { chain: string; contextHash: string | undefined }, record: RunRecord): boolean {
  return (
    run.chain === record.chain &&
    (run.contextHash === undefined || record.contextHash === undefined || run.contextHash === record.contextHash)
  );
}
