// Store calls that may go over the network: failures and silence become `store_unavailable`, in time.
import { ToolFailure } from '../errors/classify.js';
import type { MaybePromise } from './types.js';

/**
 * Calls a store. A synchronous answer passes through untouched (memory stores cost nothing); an
 * asynchronous one must settle before `deadlineAt`; any failure — thrown, rejected or too late —
 * becomes `unavailable` / `store_unavailable`.
 */
export function callStore<T>(fn: () => MaybePromise<T>, deadlineAt: number, now: () => number, what: string): MaybePromise<T> {
  const fail = (why: unknown): ToolFailure =>
    new ToolFailure({ category: 'unavailable', code: 'store_unavailable', message: `The ${what} store is unavailable: ${why instanceof Error ? why.message : String(why)}` });
  let answer: MaybePromise<T>;
  try {
    answer = fn();
  } catch (error) {
    return Promise.reject(fail(error));
  }
  if (!(answer instanceof Promise)) return answer;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(fail('no answer before the deadline')), Math.max(0, Math.min(deadlineAt - now(), 2_147_483_647)));
    answer.then(
      (value) => { clearTimeout(timer); resolve(value); },
      (error: unknown) => { clearTimeout(timer); reject(fail(error)); },
    );
  });
}
