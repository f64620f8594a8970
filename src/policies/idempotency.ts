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

  // The outcome handlers are bound to the call, not closures per call: a bound function keeps no
  // context while the call runs.
  function completed(this: CallContext, value: unknown): unknown {
    const recorded = record(this, () => store.complete(this.idempotencyKey!, value));
    return recorded ? recorded.then(() => value) : value;
  }
  function failed(this: CallContext, error: unknown): Promise<never> {
    const recorded = record(this, () => store.fail(this.idempotencyKey!, error));
    if (!recorded) throw error;
    return recorded.then(() => Promise.reject(error));
  }
  const decide = (next: Call, ctx: CallContext, claim: IdempotencyClaim): Promise<unknown> => {
    if (claim.status === 'done') {
      ctx.cached = true;
      return Promise.resolve(claim.value);
    }
    if (claim.status === 'pending') {
      ctx.cached = true;
      return untilAborted(claim.settled, ctx.run); // the deadline still applies while waiting
    }
    return next(ctx).then(completed.bind(ctx), failed.bind(ctx));
  };

  return (next) => (ctx) => {
    const key = ctx.idempotencyKey;
    if (key === undefined) return next(ctx);
    // Without a claim the tool is never called: an unavailable store fails the call.
    const claimed = callStore(() => store.begin(key), ctx.deadlineAt, now, 'idempotency');
    return claimed instanceof Promise ? claimed.then((claim) => decide(next, ctx, claim)) : decide(next, ctx, claimed);
  };
}
