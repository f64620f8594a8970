// Store interfaces: small, async, JSON-only, so memory and Redis implementations are interchangeable.
import type { TraceStep } from '../observe/trace.js';

/** Everything needed to continue a run after a confirmation gate. Plain JSON. */
export interface Checkpoint {
  v: 1;
  id: string;
  runId: string;
  traceId: string;
  chain: string;
  fingerprint: string;
  sessionId?: string;
  input: unknown;
  /** Hash of the trusted context of the original run. */
  contextHash: string;
  /** Results of the steps completed before the gate. */
  results: Record<string, unknown>;
  /** Ids of the steps completed or skipped before the gate. */
  done: string[];
  /** The gated step; inside a sub-chain, its prefixed id (`done/3/delete`). */
  gate: string;
  /**
   * A run with sub-chains: what they finished before the gate (their steps, `forEach` items, `loop`
   * iterations), so the resumed run neither runs them again nor forgets to undo them if it fails.
   */
  nested?: KeptStep[];
  /**
   * The steps before the gate whose write ran under a later generation of its idempotency key
   * (`key#1`, after an undo took the first back), by step id: their undo takes back that generation.
   */
  generations?: Record<string, number>;
  startedAt: number;
  createdAt: number;
  expiresAt: number;
  /** Trace steps so far, so the resumed trace shows the whole run. */
  trace: TraceStep[];
}

/**
 * A sub-chain step, `forEach` item or `loop` iteration that
 * finished before a gate (as the run store's journal keeps it).
 */
export interface KeptStep {
  /** Its prefixed id: `audit/find`, `done/3` (an item), `done/3/complete`. */
  step: string;
  /** Its result (absent when skipped). */
  value?: unknown;
  /** Skipped by its `when`: done, with no result. */
  skipped?: true;
  /** Its trace entry. */
  trace?: TraceStep;
  /** Its write ran under this generation of its idempotency key (absent: the first). */
  generation?: number;
}

/** The outcome of taking a checkpoint. */
export type TakeResult = { status: 'taken'; checkpoint: Checkpoint } | { status: 'used' } | { status: 'missing' };

/** Holds checkpoints; `take` must be atomic: a checkpoint is taken at most once. */
export interface CheckpointStore {
  /** Stores a checkpoint until `checkpoint.expiresAt`. */
  save(checkpoint: Checkpoint): Promise<void>;
  /** Reads a checkpoint without taking it (to check a resume request before committing to it). */
  peek(id: string): Promise<TakeResult>;
  /** Takes a checkpoint atomically: the first caller gets it, later ones get `used`. */
  take(id: string): Promise<TakeResult>;
  /** Releases what the store opened. */
  close?(): Promise<void>;
}

/** A value or a promise of it: memory stores answer synchronously, shared stores asynchronously. */
export type MaybePromise<T> = T | Promise<T>;

/** The answer to claiming an idempotency key. */
export type IdempotencyClaim =
  | { status: 'new' }
  /**
   * `at`: when the result was kept (epoch ms, the store's clock), which tells this result from one
   * kept under the key later; absent from a store that does not stamp its results.
   */
  | { status: 'done'; value: unknown; at?: number }
  /** The call was done and its undo took it back (`markUndone`): the key answers with nothing. */
  | { status: 'undone' }
  | {
      status: 'pending';
      /** The outcome of the call in flight (its value, or its failure). */
      settled: Promise<unknown>;
      /**
       * The waiter gave up (its deadline, cancel, `runner.close()`): stop whatever `settled` needs
       * (polling, timers) at once. `settled` may then stay pending; nobody awaits it any more.
       */
      cancel?: () => void;
    };

/**
 * Keeps the results of write/destructive calls by idempotency key. `begin` claims a key: the
 * claimant runs the call and then `complete`s or `fail`s it; a concurrent claimant gets `pending`
 * and waits for the same outcome; a later one gets `done` with the kept value.
 */
export interface IdempotencyStore {
  /**
   * Claims a key (atomically); a durable run's call says which run and owner claims it. `holdUntil`
   * (epoch ms, the call's deadline): while the call may still be in flight, the claim must not lapse
   * (a store whose claims expire keeps this one at least until then, never less than its own
   * pending TTL), so a duplicate waits for the call instead of running it again.
   */
  begin(key: string, run?: IdempotencyBeginOptions, holdUntil?: number): MaybePromise<IdempotencyClaim>;
  /** Keeps the successful result of the claimed call, for `ttlMs` when given (else the store's TTL). */
  complete(key: string, value: unknown, ttlMs?: number): MaybePromise<void>;
  /**
   * Ends the claim after a failure; waiters get the same error. The key is released, so a later
   * call runs again — except with `outcomeUnknown` (a write that timed out or lost its connection,
   * and may still take effect): then the key stays claimed until its pending marker expires
   * (`pendingTtlMs`, default 60 s), and duplicates until then get the same failure without running.
   * A kept result is never ended (this call's claim lapsed and another call completed the write).
   * `run`: the durable run and owner whose `begin` claimed the key; the claim is ended only while it is
   * still theirs (a recovered run's new owner may have taken it over meanwhile).
   */
  fail(key: string, error: unknown, outcomeUnknown?: boolean, run?: IdempotencyBeginOptions): MaybePromise<void>;
  /**
   * Keeps the late answer of a call failed with `outcomeUnknown` (its tool answered after its
   * timeout, deadline or cancel: the effect happened), like `complete`, so the key returns it from
   * then on. Changes nothing when the key holds a result, or a claim of a call in flight (its
   * unknown marker lapsed and another call took the key). A store without it keeps the key
   * unknown until `pendingTtlMs` and drops the late answer.
   */
  completeLate?(key: string, value: unknown, ttlMs?: number): MaybePromise<void>;
  /**
   * Records that the call kept under `key` was undone (its compensation succeeded), in place of its
   * result, for `ttlMs` when given (else the store's TTL): `begin` answers `{ status: 'undone' }` from
   * then on, and the next call with the key runs again under a key of its own. Only over a kept
   * result or an earlier mark (whose TTL it renews): a key absent or claimed is left as it is. With `at`
   * (a `done` claim's), only over the result kept then: not over one kept under the key since, by another
   * call after that result lapsed. A store without it keeps answering with the result the undo took back.
   */
  markUndone?(key: string, ttlMs?: number, at?: number): MaybePromise<void>;
}

/** Whether a call may go through the breaker now. */
export type BreakerDecision = { status: 'closed' } | { status: 'probe' } | { status: 'open'; retryAfterMs: number };

/** A change of breaker state, reported by the store when it happens. */
export type BreakerChange = 'opened' | 'closed' | undefined;

/** Circuit-breaker state per tool; the store runs the state machine so shared stores can do it atomically. */
export interface BreakerStore {
  /** Decides whether a call may go ahead at `now` (half-open lets exactly one probe through). */
  acquire(tool: string, now: number, openMs: number): MaybePromise<BreakerDecision>;
  /** Records a call that reached the service (success, or an error that is not the service's fault). */
  success(tool: string): MaybePromise<BreakerChange>;
  /** Records a transient failure; opens after `threshold` in a row, or when a probe fails. */
  failure(tool: string, now: number, threshold: number, openMs: number): MaybePromise<BreakerChange>;
  /**
   * Gives back a probe that never reached the tool (chainkit's own rate limiter refused it, or a
   * chainkit store such as the rate-limit store failed): the
   * breaker stays open and the next call may probe. Without it, such a probe reopens the breaker.
   */
  release?(tool: string): MaybePromise<void>;
  /** Whether the breaker is open at `now` (for offering tools to a model). */
  isOpen(tool: string, now: number): MaybePromise<boolean>;
}

/** A duration sample of one tool call. */
export interface TimingSample {
  tool: string;
  durationMs: number;
  complexity: number;
}

/** What the runner has learned, as plain JSON. */
export interface LearnedData {
  transitions: import('../observe/trace.js').ToolTransition[];
  samples: TimingSample[];
}

/**
 * Keeps what runners learn (transitions, timing samples) beyond one process, bounded. The runner
 * loads it once at start and appends in batches, never on a call's critical path.
 */
export interface LearningStore {
  /** Everything kept, oldest first. */
  load(): MaybePromise<LearnedData>;
  /** Appends a batch; the store trims to its bounds. */
  append(batch: LearnedData): MaybePromise<void>;
  /** Releases what the store opened. */
  close?(): MaybePromise<void>;
}

/**
 * The second argument of `IdempotencyStore.begin` for a call made by a durable run. The pending
 * marker records `runId` and `owner`. With `takeOver`, a pending claim of the same `runId` recorded
 * by another `owner` is taken over: `begin` answers `new` at once (the marker now names this owner)
 * instead of waiting for a call nobody will finish. Only a runner that owns the run through the run
 * store (it created it, took it over or claimed it after its lease expired) may pass `takeOver`:
 * the run store makes that ownership exclusive, so the other owner is gone or fenced off. A result
 * (`done`), a write whose outcome is unknown, a claim of another run or a marker without a run
 * (written by a plain `begin(key)`) is never taken over.
 */
export interface IdempotencyBeginOptions {
  /** The durable run making the call. */
  runId: string;
  /** The runner that owns the run now (`RunRecord.owner`); unique per runner instance. */
  owner: string;
  /** Take over a pending claim of this run left by another owner. Default `false`. */
  takeOver?: boolean;
}
