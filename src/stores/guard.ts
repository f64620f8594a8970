// Store calls that may go over the network: failures and silence become `store_unavailable`, in time.
// The bound is a timer and a race, not p-timeout: it holds less per call in flight, and a call made at
// the deadline must fail as `store_unavailable`, where p-timeout refuses a 0 ms wait.
import { delayUntil } from '../util/timer.js';
import { ToolFailure } from '../errors/failure.js';
import type { MaybePromise } from './types.js';

/**
 * A chainkit-side store (idempotency, breaker, rate-limit, checkpoint) failed or fell silent:
 * `unavailable` / `store_unavailable`. The tool was not reached, so the retry policy never retries
 * it (waiting on a down store only delays the answer) and the breaker never counts it against the tool.
 */
export class StoreFailure extends ToolFailure {}

/**
 * The failure of a store call, with the store named in the message.
 *
 * @example
 * ```ts
 * throw storeFailure('rate-limit', new Error('READONLY You can\'t write against a read only replica.'));
 * ```
 */
export function storeFailure(what: string, why: unknown): StoreFailure {
  return new StoreFailure({
    category: 'unavailable',
    code: 'store_unavailable',
    message: `The ${what} store is unavailable: ${why instanceof Error ? why.message : String(why)}`,
  });
}

/**
 * Calls a store. A synchronous answer passes through untouched (memory stores cost nothing); an
 * asynchronous one must settle before `deadlineAt`; any failure — thrown, rejected or too late —
 * becomes a {@link StoreFailure} (`unavailable` / `store_unavailable`).
 *
 * @example
 * ```ts
 * const claim = await callStore(() => store.begin(key), ctx.deadlineAt, now, 'idempotency');
 * ```
 */
export function callStore<T>(
  fn: () => MaybePromise<T>,
  deadlineAt: number,
  now: () => number,
  what: string,
): MaybePromise<T> {
  let answer: MaybePromise<T>;
  try {
    answer = fn();
  } catch (error) {
    return Promise.reject(storeFailure(what, error));
  }
  if (!(answer instanceof Promise)) return answer;
  return new Promise<T>((resolve, reject) => {
    // The failure for silence is only made if the timer fires.
    const timer = setTimeout(
      () => reject(storeFailure(what, 'no answer before the deadline')),
      delayUntil(deadlineAt, now),
    );
    answer.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof StoreFailure ? error : storeFailure(what, error));
      },
    );
  });
}
