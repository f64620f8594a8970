// Retry waits of durable runs shown in the store: a run waiting to retry a step long enough to be seen
// is listed `retrying` (API.md §11), marked beside the wait and unmarked when its last wait ends.
import type { RunStore } from '../stores/run-store.js';
import { STORE_WAIT_MS } from '../util/timer.js';

/**
 * Waits shorter than this are not shown as `retrying`: marking and unmarking cost two store writes
 * (about a millisecond each, under 0.2 % of a wait this long), and a shorter wait is over before
 * anyone listing runs would see it.
 */
const RETRYING_MIN_MS = 1_000;

/**
 * The runner's hook for retry waits of the durable runs it owns: a wait of at least
 * {@link RETRYING_MIN_MS} marks its run `retrying` in the store (in the background, beside the wait)
 * and unmarks it when the last wait of the run ends; the writes of one run go in order.
 *
 * @example
 * ```ts
 * parts.recorder.retryWait = retryWaits(
 *   store.markRetrying.bind(store),
 *   owner,
 *   Date.now,
 *   (id) => leases.get(id) !== undefined,
 *   bounded,
 *   warn,
 * );
 * ```
 */
export function retryWaits(
  mark: NonNullable<RunStore['markRetrying']>,
  owner: string,
  now: () => number,
  owns: (runId: string) => boolean,
  bounded: <T>(what: string, until: number, fn: () => Promise<T>) => Promise<T>,
  warn: (error: unknown, what: string) => void,
): (runId: string, delayMs: number) => (() => void) | undefined {
  const waits = new Map<string, { n: number; until: number; tail: Promise<void> }>();
  const enqueue = (runId: string, w: { n: number; until: number; tail: Promise<void> }, until: number | null): void => {
    const next = w.tail
      .then(() => bounded('retrying', now() + STORE_WAIT_MS, () => mark(runId, owner, until)))
      .then(
        () => undefined,
        (error: unknown) => warn(error, `could not record the retry wait of run ${runId}`),
      );
    w.tail = next;
    void next.then(() => {
      if (w.tail === next && w.n === 0) waits.delete(runId);
    });
  };
  return (runId, delayMs) => {
    if (delayMs < RETRYING_MIN_MS || !owns(runId)) return undefined;
    let w = waits.get(runId);
    if (!w) waits.set(runId, (w = { n: 0, until: 0, tail: Promise.resolve() }));
    const held = w;
    held.n++;
    const until = now() + delayMs;
    if (until > held.until) {
      held.until = until;
      enqueue(runId, held, until);
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (--held.n > 0) return;
      held.until = 0;
      enqueue(runId, held, null);
    };
  };
}
