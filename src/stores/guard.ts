// Store calls that may go over the network: failures and silence become `store_unavailable`, in time.
import pTimeout from 'p-timeout';
import { ToolFailure } from '../errors/classify.js';
import type { MaybePromise } from './types.js';

const MAX_TIMER_MS = 2_147_483_647;

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
  const late = fail('no answer before the deadline');
  // p-timeout builds a TimeoutError on every call; without a stack it costs next to nothing.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let bounded: Promise<T>;
  try {
    bounded = pTimeout(answer, { milliseconds: Math.max(0, Math.min(deadlineAt - now(), MAX_TIMER_MS)), message: late });
  } finally {
    Error.stackTraceLimit = limit;
  }
  return bounded.then(undefined, (error: unknown) => {
    throw error === late ? late : fail(error);
  });
}
