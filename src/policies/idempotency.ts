// Idempotency: a write/destructive call with a key runs at most once; repeats get the kept result.
import { untilAborted } from '../run/abort.js';
import { callStore } from '../stores/guard.js';
import type { IdempotencyStore, MaybePromise } from '../stores/types.js';

const SETTLE_GRACE_MS = 5000;
import type { Policy } from '../run/pipeline.js';

/**
 * Wraps the whole call (all attempts). Calls without `ctx.idempotencyKey` (reads) pass straight
 * through. A kept result, or the outcome of a concurrent call in flight, marks the call `cached`.
 */
export function idempotencyPolicy(store: IdempotencyStore, now: () => number): Policy {
  return (next) => (ctx) => {
    const key = ctx.idempotencyKey;
    if (key === undefined) return next(ctx);
    // Without a claim the tool is never called: an unavailable store fails the call.
    const claimed = callStore(() => store.begin(key), ctx.deadlineAt, now, 'idempotency');
    return claimed instanceof Promise ? claimed.then((c) => decide(c)) : decide(claimed);

    function decide(claim: Awaited<typeof claimed>): Promise<unknown> {
      if (claim.status === 'done') {
        ctx.cached = true;
        return Promise.resolve(claim.value);
      }
      if (claim.status === 'pending') {
        ctx.cached = true;
        return untilAborted(claim.settled, ctx.run); // the deadline still applies while waiting
      }
      // After the call, the store's trouble must not hide the outcome: the side effect happened (or not).
      const settle = (record: () => MaybePromise<void>): Promise<void> =>
        Promise.resolve(callStore(record, ctx.deadlineAt + SETTLE_GRACE_MS, now, 'idempotency')).then(undefined, () => undefined);
      return next(ctx).then(
        async (value) => {
          await settle(() => store.complete(key!, value));
          return value;
        },
        async (error: unknown) => {
          await settle(() => store.fail(key!, error));
          throw error;
        },
      );
    }
  };
}
