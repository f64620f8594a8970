/**
 * chainkit/stores: the store contracts, for writing a store of your own (a database chainkit does not
 * ship): the interfaces the runner calls, their records, and the checkpoint codec. The stores chainkit
 * ships are `memory*Store` in `chainkit` and the ones in `chainkit/redis`, `chainkit/postgres` and
 * `chainkit/sqlite`.
 *
 * @example
 * ```ts
 * import { decodeCheckpoint, encodeCheckpoint, type CheckpointStore } from 'chainkit/stores';
 *
 * const rows = new Map<string, string | null>(); // null: taken
 * const read = (id: string) => {
 *   const row = rows.get(id);
 *   return row === undefined
 *     ? { status: 'missing' as const }
 *     : row === null
 *       ? { status: 'used' as const }
 *       : { status: 'taken' as const, checkpoint: decodeCheckpoint(row) };
 * };
 * const checkpoints: CheckpointStore = {
 *   async save(checkpoint) { rows.set(checkpoint.id, encodeCheckpoint(checkpoint)); },
 *   async peek(id) { return read(id); },
 *   async take(id) { const result = read(id); if (result.status === 'taken') rows.set(id, null); return result; },
 * };
 * ```
 *
 * @module chainkit/stores
 */
export type {
  BreakerChange,
  BreakerDecision,
  BreakerStore,
  Checkpoint,
  KeptStep,
  CheckpointStore,
  IdempotencyBeginOptions,
  IdempotencyClaim,
  IdempotencyStore,
  LearnedData,
  LearningStore,
  MaybePromise,
  TakeResult,
  TimingSample,
} from './types.js';
export type {
  ClaimFilter,
  CreateRunResult,
  JournalEntry,
  ParkSeen,
  RunRecord,
  RunStore,
  StartedWrite,
  StoredRun,
} from './run-store.js';
export type { RunListAfter, RunListQuery, RunListResult } from './run-listing.js';
export { contextMatches, type RunContextMatch } from './run-listing.js';
export type { LastEvents, RunEventLog } from './run-event-log.js';
export { CheckpointEncodeError, decodeCheckpoint, encodeCheckpoint } from './serialize.js';
