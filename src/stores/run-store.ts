// The run store's interfaces (durable runs): records, the journal, leases, claims and listing; the
// event log's are in run-event-log.ts.
import type { TraceStep } from '../observe/trace.js';
import type { RunListQuery, RunListResult, RunStatus } from './run-listing.js';
import type { IdempotencyStore } from './types.js';
import type { LastEvents, RunEventLog } from './run-event-log.js';

/**
 * A parked run as its taker read it ({@link RunStore.takeParked}): the step it is parked at (a
 * waiting run's `waiting.step`, an in-doubt run's `step`) and how many entries its journal held.
 */
export interface ParkSeen {
  step: string;
  journal: number;
}

/** One completed step of a durable run, journaled before any step that depends on it starts. */
export interface JournalEntry {
  /** The step id. */
  step: string;
  /** The step's result (absent when the step was skipped by its `when`). */
  value?: unknown;
  /** The step was skipped: done, with no result. */
  skipped?: true;
  /** The step's write ran under this generation of its idempotency key (`key#1`…; absent: the first). */
  generation?: number;
  /**
   * The step's trace entry, so a recovered run's trace shows the whole run. Absent on a `started`
   * entry and on a `decision` that does not compensate.
   */
  trace?: TraceStep;
  /**
   * Compensation, journaled: `start` (the run failed at `step` with `error` and begins to undo; it
   * is never continued forward again), then one entry per undo of `step`: `undone`, or `undo_failed`
   * with its `error`. Absent on a completed step.
   */
  compensation?: 'start' | 'undone' | 'undo_failed';
  /** The run's failure (`start`) or the undo's (`undo_failed`), as a `ChainErrorInfo`. */
  error?: unknown;
  /**
   * On `start`: what the run's failed sub-chains had undone themselves by then (journaled before it as
   * `undone`/`undo_failed` entries of their own), as the run's result reports it first.
   */
  undone?: { compensated: string[]; compensationFailures?: { step: string; error: unknown }[] };
  /**
   * A plain write (a write or destructive tool not declared `idempotent`) of `step` is about to be
   * called: journaled before the call, so a runner that finds it with no outcome after it knows the
   * write may have taken effect (the run is parked `in_doubt`, never called blindly again).
   */
  started?: StartedWrite;
  /**
   * Someone decided the plain writes in doubt before this entry (`runner.decide(runId, { retry, by })`):
   * `retry: true`, they are called once more; `false`, the run fails (this entry is then also a
   * compensation `start`, with its `error`).
   */
  decision?: { retry: boolean; by: string; at: number };
}

/** What a `started` journal entry keeps of a plain write about to be called. */
export interface StartedWrite {
  tool: string;
  /** The step's input, redacted as a trace's (secret-named fields masked). */
  input?: unknown;
  /** Epoch ms. */
  at: number;
  /** Who decided that it be called again, when it is a retry decided by `runner.decide`. */
  decidedBy?: string;
}

/** What a run store keeps of one durable run. Plain JSON. */
export interface RunRecord {
  v: 1;
  runId: string;
  traceId: string;
  chain: string;
  fingerprint: string;
  sessionId?: string;
  input: unknown;
  /** The trusted context, validated: a recovered run continues with it, its caller being gone. */
  context: unknown;
  /**
   * A hash of the validated context: the run id is bound to `chain` and this (a caller with another
   * chain or context gets `mismatch` from {@link RunStore.create}). Absent on records written before it.
   */
  contextHash?: string;
  startedAt: number;
  /** The run's deadline (epoch ms): a run recovered after it fails with `deadline_exceeded`. */
  deadlineAt: number;
  status: RunStatus;
  /** The runner instance that runs it (meaningful while `running`). */
  owner: string;
  /** Epoch ms until which the owner's lease holds; past it, the run may be claimed by another. */
  leaseUntil: number;
  /** The confirmation gate the user approved (set by `reopen`): a recovered run does not ask again. */
  approvedGate?: string;
  /** The run's result once it has ended or parked at a gate (a `RunResult` as JSON). */
  result?: unknown;
}

/** A run record with its journal, oldest entry first. */
export interface StoredRun extends RunRecord {
  journal: JournalEntry[];
  /**
   * Set while a run in flight (`status: 'running'`) waits out a backoff or Retry-After long enough to
   * show ({@link RunStore.markRetrying}): the epoch ms the wait ends. Listings show such a run `retrying`.
   */
  retryingUntil?: number;
  /**
   * Someone cancelled the run in flight ({@link RunStore.requestCancel}):
   * whoever continues it ends it cancelled instead.
   */
  cancelRequested?: { reason?: string };
  /**
   * On a run just claimed by {@link RunStore.claimExpired} or taken over by {@link RunStore.create}
   * (`taken`): the owner whose lease had expired. Reported to the new owner, not kept.
   */
  previousOwner?: string;
}

/** The answer to {@link RunStore.create}. */
export type CreateRunResult =
  /** Recorded: the caller owns the new run. */
  | { status: 'created' }
  /** The run id exists and has ended or parked: `run.result` is its recorded result. */
  | { status: 'ended'; run: StoredRun }
  /** The run id is in flight under a live lease held by `run.owner`. */
  | { status: 'busy'; run: StoredRun }
  /** The run id was in flight under an expired lease: the caller has taken it over (atomically). */
  | { status: 'taken'; run: StoredRun }
  /**
   * The run id is recorded for another chain or context (or, in flight, another fingerprint of the
   * chain): nothing of that run is returned, and it is left as it was.
   */
  | { status: 'mismatch' };

/**
 * Which runs {@link RunStore.claimExpired} may claim: those of these chains with these fingerprints
 * (the ones the claiming runner can continue), and any whose deadline passed before `orphanedBefore`.
 */
export interface ClaimFilter {
  chains: readonly { name: string; fingerprint: string }[];
  /** Epoch ms: a run whose deadline passed before it may be claimed whatever its chain. Default: none. */
  orphanedBefore?: number;
}

/**
 * Keeps durable runs: the run record, its step journal, the owner's lease and the result. Every
 * change of ownership (create/take over, claim, reopen) is atomic across processes; writes by an
 * owner that has lost its lease are refused (they return `false`) and change nothing.
 */
export interface RunStore {
  /**
   * Records a new run (owned by `record.owner` until `record.leaseUntil`) unless its `runId`
   * exists; an existing one is reported, and taken over when its lease expired before `now`. An
   * existing run of another chain or `contextHash` (or in flight with another fingerprint) is
   * `mismatch`, untouched.
   */
  create(record: RunRecord, now: number): Promise<CreateRunResult>;
  /**
   * Appends `entries` (at least one), in order, in one atomic write: all or none. With `complete`,
   * also keeps a call's idempotency result in the same round trip (stores that hold both). `false`:
   * `owner` no longer holds the run (nothing appended).
   */
  journal(
    runId: string,
    owner: string,
    entries: readonly JournalEntry[],
    complete?: { key: string; value: unknown; ttlMs?: number },
  ): Promise<boolean>;
  /**
   * Extends the lease of every listed run `owner` still holds, to `leaseUntil`: one round trip per
   * runner tick. Resolves with the ids renewed: a listed run missing from it is no longer this owner's.
   */
  renew(owner: string, runIds: readonly string[], leaseUntil: number): Promise<string[]>;
  /**
   * Records how a run ended (`completed`, `failed`, `declined`) or that it parked at a gate
   * (`awaiting_confirmation`: no owner, no lease). Kept for `retentionMs`. `entries` are journaled in
   * the same atomic write (steps no other step depends on: nothing waits for them). `false`: not the owner.
   */
  finish(
    runId: string,
    owner: string,
    status: Exclude<RunStatus, 'running'>,
    result: unknown,
    retentionMs: number,
    entries?: readonly JournalEntry[],
  ): Promise<boolean>;
  /**
   * {@link RunStore.finish}, and in the same write the run's {@link LastEvents | last events} appended to its
   * {@link RunStore.events | event log}: the end of a run in one round trip. The events are appended only
   * when the end is recorded (`true`). A store without it is sent `finish`, then the events.
   */
  finishWithEvents?(
    runId: string,
    owner: string,
    status: Exclude<RunStatus, 'running'>,
    result: unknown,
    retentionMs: number,
    entries: readonly JournalEntry[],
    last: LastEvents,
  ): Promise<boolean>;
  /**
   * Makes a run parked at a gate `running` again under `owner` (a resume): records the approved
   * gate (a recovered run does not ask again) and the resumed segment's deadline, clears the stored
   * `result`. `false`: the run is not parked (missing, running or ended).
   */
  reopen(
    runId: string,
    owner: string,
    update: { leaseUntil: number; approvedGate: string; deadlineAt: number },
  ): Promise<boolean>;
  /**
   * Claims up to `limit` `running` runs whose lease expired before `now`, atomically (one claimer
   * wins each run across processes), for `owner` until `leaseUntil`; returns them with their journals.
   * With `only`, claims only the runs it allows; the others are not touched.
   */
  claimExpired(owner: string, now: number, leaseUntil: number, limit: number, only?: ClaimFilter): Promise<StoredRun[]>;
  /** The run and its journal, or `undefined`. */
  get(runId: string): Promise<StoredRun | undefined>;
  /**
   * Summaries of the runs matching `query`, newest first (by `startedAt`, ties by run id descending),
   * at most `query.limit`, from an index (never a scan of all runs). `more`: further runs may match.
   * Absent: `runner.listRuns` is refused.
   */
  listRuns?(query: RunListQuery): Promise<RunListResult>;
  /**
   * `true` when `listRuns` honours `query.contexts` (lists one user's runs from an index of its own).
   * Absent: `runner.listRuns({ context })` is refused, so a store written before it never lists every
   * user's runs to one.
   */
  readonly listsByContext?: boolean;
  /**
   * The idempotency store `journal(…, complete)` writes into, with its encoding (absent: `complete`
   * is refused). A runner passes `complete` only when this is its `stores.idempotency`.
   */
  readonly idempotency?: IdempotencyStore;
  /** The runs' event log (`runner.watch`, `runner.stream`); absent: runs record no events. */
  readonly events?: RunEventLog;
  /** Releases what the store opened. */
  close?(): Promise<void>;
  /**
   * Marks a run `owner` holds (`running`) as waiting out a retry until `until` (epoch ms), or clears
   * the mark (`null`): listings show it `retrying` meanwhile, and move it back to `running` after.
   * Finishing or claiming the run clears the mark. `false`: not the owner, or not running. Absent:
   * runs never show `retrying`.
   */
  markRetrying?(runId: string, owner: string, until: number | null): Promise<boolean>;
  /**
   * Records that a run in flight was cancelled (with `reason`), whoever owns it: a runner that takes it
   * over (recovery, or the canceller itself once its lease expired) ends it cancelled instead of continuing it.
   * `false`: the run is not in flight. Absent: a run whose owner died can only be cancelled by the runner that
   * takes it over.
   */
  requestCancel?(runId: string, reason: string | undefined): Promise<boolean>;
  /**
   * Takes a run parked with status `from` (no owner, no lease: `in_doubt`, for one) back to
   * `running` under `owner` until `update.leaseUntil`, with the new segment's deadline, clearing its
   * stored `result`, and appends `entry` to its journal in the same atomic write. Exactly one of
   * several concurrent takers gets `true`; `false`: the run is not parked with that status (missing,
   * running, ended, or taken first). Absent: parked runs other than gates cannot be decided.
   * With `seen` (what the caller read: the step the run was parked at and its journal's length), the
   * take also needs the run still parked there: a run taken, continued and parked again since that
   * read is not taken by a late signal, wake-up or decision meant for its earlier park. The store keeps
   * the parked step beside the run when it parks it; a run parked before a store kept it (Redis and
   * PostgreSQL rows written by earlier versions) is judged by its journal alone.
   */
  takeParked?(
    runId: string,
    owner: string,
    from: RunStatus,
    update: { leaseUntil: number; deadlineAt: number },
    entry?: JournalEntry,
    seen?: ParkSeen,
  ): Promise<boolean>;
  /**
   * Parks a run `owner` holds as `waiting` (a sleep or a waitFor, API.md §12): no owner, no lease,
   * kept until taken back ({@link RunStore.takeParked} with `'waiting'`), `result` recorded and
   * `entries` journaled in the same write. `wakeAt` (epoch ms): when {@link RunStore.dueWaiting}
   * lists it (a sleep's end, a waitFor's timeout); `null`: only a signal takes it. `false`: not the owner.
   * Absent: runs sleep in place and cannot wait for signals.
   */
  parkWaiting?(
    runId: string,
    owner: string,
    result: unknown,
    wakeAt: number | null,
    entries?: readonly JournalEntry[],
  ): Promise<boolean>;
  /**
   * Up to `limit` ids of runs parked `waiting` whose `wakeAt` is at or before `now`, earliest first,
   * from an index (never a scan of all runs); with `only`, those of its chains and fingerprints.
   */
  dueWaiting?(now: number, limit: number, only?: ClaimFilter): Promise<string[]>;
}
