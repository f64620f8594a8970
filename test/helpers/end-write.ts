// A run store whose end write (`finish`, and `finishWithEvents` where the store has it) goes through a
// test's hand: fails, never answers, or kills the process first.
import type { RunStore } from '../../src/stores/index.js';

/**
 * `runs` with its end write replaced by `write`, which may call `next` (the store's own).
 *
 * @example
 * ```ts
 * const dying = atEndWrite(stores.runs, () => new Promise(() => {})); // never answers
 * ```
 */
export function atEndWrite(runs: RunStore, write: (next: () => Promise<boolean>) => Promise<boolean>): RunStore {
  const withEvents = runs.finishWithEvents?.bind(runs);
  return {
    ...runs,
    finish: (...a) => write(() => runs.finish(...a)),
    ...(withEvents && { finishWithEvents: (...a: Parameters<typeof withEvents>) => write(() => withEvents(...a)) }),
  };
}
