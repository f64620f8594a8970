// Idempotency: a write/destructive call with a key runs at most once; repeats get the kept result.
import { untilAborted } from '../run/abort.js';
import type { Call, CallContext, Policy } from '../run/pipeline.js';
import { callStore } from '../stores/guard.js';
import type { IdempotencyClaim, IdempotencyStore, MaybePromise } from '../stores/types.js';

/** How long after the deadline the outcome may still take to be recorded. */
const SETTLE_GRACE_MS = 5000;

/**
 * Wraps the whole call (all attempts). Calls without `ctx.idempotencyKey` (reads) pass straight
 * through. A kept result, or the outcome of a concurrent call in flight, marks the call `cached`.
 */
export function idempotencyPolicy(store: IdempotencyStore, now: () => number): Policy {
  // After the call, the store's trouble must not hide the outcome: the side effect happened (or not).
  // Resolves to undefined at once when the store answered synchronously (memory): no extra hop.
  const record = (ctx: CallContext, write: () => MaybePromise<void>): Promise<unknown> | undefined => {
    const done = callStore(write, ctx.deadlineAt + SETTLE_GRACE_MS, now, 'idempotency');
    return done instanceof Promise ? done.then(undefined, () => undefined) : undefined;
  };

  // Hoisted out of the per-call closure: a call in flight keeps only the two handlers below.
  const decide = (next: Call, ctx: CallContext, key: string, claim: IdempotencyClaim): Promise<unknown> => {
    if (claim.status === 'done') {
      ctx.cached = true;
      return Promise.resolve(claim.value);
    }
    if (claim.status === 'pending') {
      ctx.cached = true;
      return untilAborted(claim.settled, ctx.run); // the deadline still applies while waiting
    }
    return next(ctx).then(
      (value) => {
        const recorded = record(ctx, () => store.complete(key, value));
        return recorded ? recorded.then(() => value) : value;
      },
      (error: unknown) => {
        const recorded = record(ctx, () => store.fail(key, error));
        if (!recorded) throw error;
        return recorded.then(() => Promise.reject(error));
      },
    );
  };

  return (next) => (ctx) => {
    const key = ctx.idempotencyKey;
    if (key === undefined) return next(ctx);
    // Without a claim the tool is never called: an unavailable store fails the call.
    const claimed = callStore(() => store.begin(key), ctx.deadlineAt, now, 'idempotency');
    return claimed instanceof Promise ? claimed.then((claim) => decide(next, ctx, key, claim)) : decide(next, ctx, key, claimed);
  };
}
