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
  /** The gated step. */
  gate: string;
  startedAt: number;
  createdAt: number;
  expiresAt: number;
  /** Trace steps so far, so the resumed trace shows the whole run. */
  trace: TraceStep[];
}

/** The outcome of taking a checkpoint. */
export type TakeResult =
  | { status: 'taken'; checkpoint: Checkpoint }
  | { status: 'used' }
  | { status: 'missing' };

/** Holds checkpoints; `take` must be atomic: a checkpoint is taken at most once. */
export interface CheckpointStore {
  /** Stores a checkpoint until `checkpoint.expiresAt` (saving the same id again restores it). */
  save(checkpoint: Checkpoint): Promise<void>;
  /** Takes a checkpoint atomically: the first caller gets it, later ones get `used`. */
  take(id: string): Promise<TakeResult>;
  /** Releases what the store opened. */
  close?(): Promise<void>;
}
