// What `runner.close()` releases last: the stores the runner was given or opened, each flushed and
// closed, all within one bound.
import { callStore } from '../stores/guard.js';
import type { RunnerParts } from './parts.js';

/**
 * Flushes and closes the runner's stores side by side, all by `closeBy` (epoch ms): behind a
 * partition their short waits must not add up. A store that does not finish in time is logged, never thrown.
 *
 * @example
 * ```ts
 * await releaseStores(parts, now() + CLOSE_WAIT_MS);
 * ```
 */
export async function releaseStores(parts: RunnerParts, closeBy: number): Promise<void> {
  const { options, learning, logger, gates } = parts;
  const { now } = parts.calls;
  const stores = options.stores;
  const release = async (what: string, fn: () => unknown): Promise<void> => {
    try {
      await callStore(fn, closeBy, now, what);
    } catch (error) {
      logger?.warn({ err: error, store: what }, `close(): the ${what} store did not finish in time`);
    }
  };
  await Promise.all([
    release('rate-limit', parts.closeRateLimits),
    learning &&
      release('learning', () => learning.ready.then(() => learning.flush()).then(() => stores?.metrics?.close?.())),
    !learning && stores?.metrics?.close && release('learning', () => stores.metrics!.close!()),
    gates.checkpoints.close && release('checkpoint', () => gates.checkpoints.close!()),
    stores?.runs?.close && release('run', () => stores.runs!.close!()),
  ]);
}
