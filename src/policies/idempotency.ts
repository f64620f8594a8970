// Idempotency: a write/destructive call with a key runs at most once; repeats get the kept result.
import { untilAborted } from '../run/abort.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { Policy } from '../run/pipeline.js';

/**
 * Wraps the whole call (all attempts). Calls without `ctx.idempotencyKey` (reads) pass straight
 * through. A kept result, or the outcome of a concurrent call in flight, marks the call `cached`.
 */
export function idempotencyPolicy(store: IdempotencyStore): Policy {
  return (next) => (ctx) => {
    const key = ctx.idempotencyKey;
    if (key === undefined) return next(ctx);
    const claimed = store.begin(key);
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
      return next(ctx).then(
        async (value) => {
          await store.complete(key!, value);
          return value;
        },
        async (error: unknown) => {
          await store.fail(key!, error);
          throw error;
        },
      );
    }
  };
}
