// In-process stores: the defaults, bounded by TTL and a maximum count (oldest evicted first).
import type { Checkpoint, CheckpointStore, TakeResult } from './types.js';

/** Options of the memory stores. */
export interface MemoryStoreOptions {
  /** Maximum entries kept; the oldest are evicted first. Default 10 000. */
  maxEntries?: number;
  /** Clock, for tests. Default `Date.now`. */
  now?: () => number;
}

interface Entry {
  checkpoint: Checkpoint | undefined; // undefined once taken: a tombstone that answers 'used'
  expiresAt: number;
}

/**
 * A checkpoint store in memory: one process only. Taken checkpoints leave a tombstone until they
 * expire, so a reused token says `already_used` rather than `invalid_token`.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, stores: { checkpoints: memoryCheckpointStore({ maxEntries: 1000 }) } });
 * ```
 */
export function memoryCheckpointStore(options: MemoryStoreOptions = {}): CheckpointStore {
  const max = options.maxEntries ?? 10_000;
  if (!(Number.isInteger(max) && max > 0)) throw new TypeError('Expected `maxEntries` to be a positive integer.');
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>(); // insertion order = age

  const sweep = (): void => {
    const t = now();
    for (const [id, e] of entries) {
      if (e.expiresAt <= t) entries.delete(id);
    }
    while (entries.size > max) entries.delete(entries.keys().next().value as string);
  };

  return {
    async save(checkpoint) {
      entries.set(checkpoint.id, { checkpoint, expiresAt: checkpoint.expiresAt });
      if (entries.size > max) sweep();
    },
    async take(id): Promise<TakeResult> {
      const e = entries.get(id);
      if (!e || e.expiresAt <= now()) return { status: 'missing' };
      if (!e.checkpoint) return { status: 'used' };
      const checkpoint = e.checkpoint;
      e.checkpoint = undefined; // synchronous: no other take can interleave
      return { status: 'taken', checkpoint };
    },
  };
}
