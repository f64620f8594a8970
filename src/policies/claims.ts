// What a claim does with the store besides claiming: writes whose failure must not hide the call's outcome,
// and a duplicate's wait for the call in flight under its key (idempotency.ts).
import { abortAtDeadline, untilAborted } from './abort.js';
import type { CallContext } from './types.js';
import type { IdempotencyClaim, IdempotencyStore, MaybePromise } from '../stores/types.js';

/**
 * Starts a store write whose failure must not hide the call's outcome:
 * a settled promise, or undefined when it answered synchronously.
 */
export function start(write: () => MaybePromise<void>): Promise<unknown> | undefined {
  try {
    const done = write();
    return done instanceof Promise ? done.then(undefined, noop) : undefined;
  } catch {
    return undefined;
  }
}

/** {@link start} of `store.complete` without a closure: every write that ends ok records one. */
export function startComplete(
  store: IdempotencyStore,
  key: string,
  value: unknown,
  ttlMs: number | undefined,
): Promise<unknown> | undefined {
  try {
    const done = store.complete(key, value, ttlMs);
    return done instanceof Promise ? done.then(undefined, noop) : undefined;
  } catch {
    return undefined;
  }
}

export type Pending = Extract<IdempotencyClaim, { status: 'pending' }>;

export function noop(): void {}

/** Stops a claim nobody will act on: its waiting ends, a late rejection is handled. */
export function abandon(claim: Pending): void {
  claim.cancel?.();
  claim.settled.then(undefined, noop);
}

/**
 * Waits for the concurrent duplicate's outcome, but never past this call's end: its deadline
 * (`timeout` / `deadline_exceeded`, aborting the run as an attempt's deadline clamp does), the
 * caller's cancel or `runner.close()` (the run's scope aborts). Then the store stops waiting too.
 * Closures here are fine: only a duplicate of a call in flight comes this way.
 */
export function awaitDuplicate(ctx: CallContext, claim: Pending, now: () => number): Promise<unknown> {
  const { run } = ctx;
  if (run.aborted) {
    abandon(claim);
    return Promise.reject(run.reason);
  }
  const where = ctx.chain ? `Chain ${ctx.chain} passed its deadline` : 'The call passed its deadline';
  const cancelDeadline = abortAtDeadline(
    run,
    ctx.deadlineAt,
    now,
    `${where} while waiting for a duplicate call (same idempotency key) still in flight.`,
  );
  const off = run.onAbort(() => abandon(claim));
  const done = (): void => {
    cancelDeadline();
    off();
  };
  const outcome = untilAborted(claim.settled, run);
  outcome.then(done, done);
  return outcome;
}
