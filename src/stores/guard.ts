// Store calls that may go over the network: failures and silence become `store_unavailable`, in time.
import { ToolFailure } from '../errors/classify.js';
import type { MaybePromise } from './types.js';

/**
 * Passes synchronous answers through untouched (memory stores cost nothing); an asynchronous one
 * must settle before `deadlineAt`, and any failure becomes `unavailable` / `store_unavailable`.
 */
export function guardStore<T>(answer: MaybePromise<T>, deadlineAt: number, now: () => number, what: string): MaybePromise<T> {
  if (!(answer instanceof Promise)) return answer;
  return new Promise<T>((resolve, reject) => {
    const fail = (why: string): void => reject(new ToolFailure({ category: 'unavailable', code: 'store_unavailable', message: `The ${what} store is unavailable: ${why}` }));
    const timer = setTimeout(() => fail('no answer before the deadline'), Math.max(0, Math.min(deadlineAt - now(), 2_147_483_647)));
    answer.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (error: unknown) => { clearTimeout(timer); fail(error instanceof Error ? error.message : String(error)); },
    );
  });
}

/** Calls a store and guards it; a store that throws synchronously is unavailable too. */
export function callStore<T>(fn: () => MaybePromise<T>, deadlineAt: number, now: () => number, what: string): MaybePromise<T> {
  let answer: MaybePromise<T>;
  try {
    answer = fn();
  } catch (error) {
    answer = Promise.reject(error);
  }
  return guardStore(answer, deadlineAt, now, what);
}
