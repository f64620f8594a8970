// Idempotency: a write/destructive call with a key runs at most once; repeats get the kept result.
import { RunAbortReason, ToolFailure } from '../errors/classify.js';
import { abortAtDeadline, untilAborted } from './abort.js';
import type { Call, CallContext, Policy } from './types.js';
import { callStore } from '../stores/guard.js';
import type { IdempotencyClaim, IdempotencyStore, MaybePromise } from '../stores/types.js';

/** How long after the deadline the outcome may still take to be recorded. */
const SETTLE_GRACE_MS = 5000;

type Pending = Extract<IdempotencyClaim, { status: 'pending' }>;

function noop(): void {}

/** Stops a claim nobody will act on: its waiting ends, a late rejection is handled. */
function abandon(claim: Pending): void {
  claim.cancel?.();
  claim.settled.then(undefined, noop);
}

/**
 * Waits for the concurrent duplicate's outcome, but never past this call's end: its deadline
 * (`timeout` / `deadline_exceeded`, aborting the run as an attempt's deadline clamp does), the
 * caller's cancel or `runner.close()` (the run's scope aborts). Then the store stops waiting too.
 * Closures here are fine: only a duplicate of a call in flight comes this way.
 */
function awaitDuplicate(ctx: CallContext, claim: Pending, now: () => number): Promise<unknown> {
  const { run } = ctx;
  if (run.aborted) {
    abandon(claim);
    return Promise.reject(run.reason);
  }
  const where = ctx.chain ? `Chain ${ctx.chain} passed its deadline` : 'The call passed its deadline';
  const cancelDeadline = abortAtDeadline(run, ctx.deadlineAt, now, `${where} while waiting for a duplicate call (same idempotency key) still in flight.`);
  const off = run.onAbort(() => abandon(claim));
  const done = (): void => {
    cancelDeadline();
    off();
  };
  const outcome = untilAborted(claim.settled, run);
  outcome.then(done, done);
  return outcome;
}

/**
 * Wraps the whole call (all attempts). Calls without `ctx.idempotencyKey` (reads) pass straight
 * through. A kept result, or the outcome of a concurrent call in flight, marks the call `cached`.
 * Waiting for a call in flight ends at this call's deadline or abort (docs/guides/policies.md: nothing waits
 * past the deadline); a store that fails or falls silent fails the call with `store_unavailable`.
 *
 * @example
 * ```ts
 * const call = compose([idempotencyPolicy(memoryIdempotencyStore(), Date.now)], invokeTool(invoker));
 * ```
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
    const recorded = record(this, () => store.complete(this.idempotencyKey!, value, this.tool.idempotencyTtlMs));
    return recorded ? recorded.then(() => value) : value;
  }
  function failed(this: CallContext, error: unknown): Promise<never> {
    // A write that may still take effect keeps its key claimed: a duplicate must not run it again (docs/guides/policies.md, no blind retry of a write).
    // So does one the run's deadline, cancel or close() cut off after the tool was reached.
    const cutOff = this.reached === true && (this.run.aborted || error instanceof RunAbortReason || (error instanceof ToolFailure && error.info.code === 'deadline_exceeded'));
    const unknown = cutOff || (error instanceof ToolFailure && error.info.outcomeUnknown === true);
    const recorded = record(this, () => store.fail(this.idempotencyKey!, error, unknown));
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
      return awaitDuplicate(ctx, claim, now);
    }
    return next(ctx).then(completed.bind(ctx), failed.bind(ctx));
  };

  return (next) => (ctx) => {
    const key = ctx.idempotencyKey;
    if (key === undefined) return next(ctx);
    const durable = ctx.durable;
    // A durable run's step under its own key (`runId:step`) is kept by the run's journal, and the run
    // store lets one owner at a time run it: a second record would cost two round trips and add nothing.
    if (durable !== undefined && ctx.step !== undefined && key.length === ctx.runId.length + 1 + ctx.step.length && key === `${ctx.runId}:${ctx.step}`) return next(ctx);
    // Without a claim the tool is never called: an unavailable store fails the call.
    let begun: MaybePromise<IdempotencyClaim> | undefined;
    const claimed = callStore(() => (begun = durable === undefined ? store.begin(key) : store.begin(key, durable)), ctx.deadlineAt, now, 'idempotency');
    if (!(claimed instanceof Promise)) return decide(next, ctx, claimed);
    return claimed.then((claim) => decide(next, ctx, claim), (error: unknown) => {
      // A claim that arrives after the call gave up on the store: release it, stop its waiting.
      if (begun instanceof Promise) {
        begun.then((late) => {
          if (late.status === 'pending') abandon(late);
          else if (late.status === 'new') void record(ctx, () => store.fail(key, error));
        }, noop);
      }
      throw error;
    });
  };
}
