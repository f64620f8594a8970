// Idempotency: a write/destructive call with a key runs at most once; repeats get the kept result.
import { RunAbortReason, ToolFailure } from '../errors/failure.js';
import type { Call, CallContext, Policy, UndoneWrite } from './types.js';
import { generationKey, generationStoreKey, heldForWrite, keptByJournal, undoStoreKey } from './undone.js';
import { callStore, storeFailure } from '../stores/guard.js';
import { delayUntil } from '../util/timer.js';
import type { IdempotencyClaim, IdempotencyStore, MaybePromise } from '../stores/types.js';
import { abandon, awaitDuplicate, noop, start, startComplete } from './claims.js';
import { unknownOutcomeInfo } from '../stores/pending.js';
import { secretMask } from '../observe/redact.js';
import type { RedactRule } from '../util/redact.js';

/**
 * How long a call's result is kept: its tool's `idempotencyTtlMs`; an undo's, as long as the mark of
 * the write it undid, so that a later write under that generation of the key (once the mark lapsed)
 * is not answered by this undo.
 */
function keptFor(ctx: CallContext): number | undefined {
  const write = ctx.undoes;
  return write === undefined ? ctx.tool.idempotencyTtlMs : write.ttlMs;
}

/** What a call that began while an undo read the lapsed key of its write is told: try again. */
function lapsed(key: string): Error {
  return Object.assign(new Error(`The idempotency key ${key} was being read by an undo; try again.`), {
    status: 409,
  });
}

/**
 * This call's failure as the store keeps it and hands it to other calls under the same key (a
 * duplicate waiting for it, a later call while the outcome is unknown): another caller's, so the
 * secrets of this call's input and context are masked out of its text (§6: never in text).
 */
function sharedFailure(error: unknown, ctx: CallContext, redact: RedactRule | undefined): ToolFailure {
  const info = unknownOutcomeInfo(error);
  const mask = secretMask(redact, ctx.input, ctx.context);
  return new ToolFailure({
    ...info,
    message: mask.text(info.message),
    ...(info.userMessage !== undefined && { userMessage: mask.text(info.userMessage) }),
  });
}

/**
 * One claimed call, until its outcome is kept. A write whose outcome is unknown (timed out, cut off)
 * may still answer: that late answer is its outcome, kept under its key once the unknown failure is.
 */
class Claimed {
  /** `running` until the call settles; `unknown` once it failed with its outcome unknown; `over` otherwise. */
  state: 'running' | 'unknown' | 'over' = 'running';
  /** A late answer of an earlier attempt that came while the call was still running. */
  early: { value: unknown } | undefined;
  /** The write of the unknown failure, which the late answer must follow. */
  recorded: Promise<unknown> | undefined;
  /** What the store is told once the call succeeded, besides its result (an undo's: its write is undone). */
  after: (() => Promise<unknown> | undefined) | undefined;
  constructor(
    readonly ctx: CallContext,
    readonly key: string,
  ) {}
}

/**
 * Wraps the whole call (all attempts). Calls without `ctx.idempotencyKey` (reads) pass straight
 * through; the store keeps a call under `ctx.storeKey` (its key, per tool and per caller). A kept
 * result, or the outcome of a concurrent call in flight, marks the call `cached`. Waiting for a call
 * in flight ends at this call's deadline or abort (nothing waits past the deadline); a store that
 * fails or falls silent fails the call with `store_unavailable`. A write whose outcome is unknown
 * keeps its key claimed; its late answer, when it comes, is kept as its result.
 *
 * @example
 * ```ts
 * const call = compose([idempotencyPolicy(memoryIdempotencyStore(), Date.now)], invokeTool(invoker));
 * ```
 */
export function idempotencyPolicy(store: IdempotencyStore, now: () => number, redact?: RedactRule): Policy {
  // After the call, the store's trouble must not hide the outcome: the side effect happened (or not).
  // The caller's answer waits for the record's write until the run's deadline, or until its scope
  // aborts (deadline, cancel, `close()`): the write goes on, but no wait or timer outlives the run
  // (a durable run's partition rule). Undefined when the store answered synchronously (memory): no extra hop.
  const settleBy = (done: Promise<unknown> | undefined, ctx: CallContext): Promise<unknown> | undefined => {
    if (done === undefined) return undefined;
    const scope = ctx.run;
    if (scope.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const stop = (): void => {
        clearTimeout(timer);
        off();
        resolve();
      };
      const timer = setTimeout(stop, delayUntil(ctx.deadlineAt, now));
      const off = scope.onAbort(stop);
      void done.then(stop);
    });
  };
  /** Keeps the late answer of a call whose failure was kept as unknown (after that write). */
  const keepLate = (claim: Claimed, value: unknown): void => {
    const { ctx } = claim;
    // Nobody waits for it: the write goes on, with no timer to keep the process alive.
    const late = (): unknown => {
      void start(() => (store.completeLate ? store.completeLate(claim.key, value, keptFor(ctx)) : undefined));
      // An undo that answered late did take its write back.
      return claim.after?.();
    };
    if (claim.recorded) void claim.recorded.then(late);
    else late();
  };

  // The outcome handlers are bound to the claim, not closures per call: a bound function keeps no
  // context while the call runs.
  function completed(this: Claimed, value: unknown): unknown {
    this.state = 'over';
    const ctx = this.ctx;
    const kept = startComplete(store, this.key, value, keptFor(ctx));
    const also = this.after?.();
    const recorded = settleBy(also === undefined ? kept : Promise.all([kept, also]), ctx);
    return recorded ? recorded.then(() => value) : value;
  }
  function failed(this: Claimed, error: unknown): Promise<never> {
    const ctx = this.ctx;
    // A write that may still take effect keeps its key claimed: a duplicate must not run it
    // again (no blind retry of a write).
    // So does one the run's deadline, cancel or close() cut off after the tool was reached.
    const cutOff =
      ctx.reached === true &&
      (ctx.run.aborted ||
        error instanceof RunAbortReason ||
        (error instanceof ToolFailure && error.info.code === 'deadline_exceeded'));
    const unknown = cutOff || (error instanceof ToolFailure && error.info.outcomeUnknown === true);
    const early = this.early;
    this.state = unknown && early === undefined ? 'unknown' : 'over';
    // An earlier attempt answered late while this call ran: the write happened, and that answer is its outcome.
    const written =
      early !== undefined
        ? start(() => store.complete(this.key, early.value, keptFor(ctx)))
        : start(() => store.fail(this.key, sharedFailure(error, ctx, redact), unknown, ctx.durable));
    if (early !== undefined) void this.after?.();
    // The late answer's write follows this one's, wherever the caller stopped waiting.
    if (unknown) this.recorded = written;
    const recorded = settleBy(written, ctx);
    if (!recorded) throw error;
    return recorded.then(() => Promise.reject(error));
  }
  function answeredLate(this: Claimed, value: unknown): void {
    if (this.state === 'running') this.early ??= { value };
    else if (this.state === 'unknown') {
      this.state = 'over'; // one late answer is the outcome; a later one changes nothing
      keepLate(this, value);
    }
  }
  const decide = (
    next: Call,
    ctx: CallContext,
    key: string,
    claim: IdempotencyClaim,
    after?: () => Promise<unknown> | undefined,
  ): Promise<unknown> => {
    if (claim.status === 'done') {
      ctx.cached = true;
      void after?.();
      return Promise.resolve(claim.value);
    }
    if (claim.status === 'pending') {
      ctx.cached = true;
      return awaitDuplicate(ctx, claim, now);
    }
    // A write taken back by its undo runs again, under its key's next generation.
    if (claim.status === 'undone') return nextGeneration(next, ctx);
    const claimed = new Claimed(ctx, key);
    claimed.after = after;
    ctx.lateAnswer = answeredLate.bind(claimed);
    return next(ctx).then(completed.bind(claimed), failed.bind(claimed));
  };
  /** Claims `key` for the call: the store's answer; a store that throws is `store_unavailable`. */
  const begin = (ctx: CallContext, key: string): MaybePromise<IdempotencyClaim> => {
    try {
      return store.begin(key, ctx.durable, ctx.deadlineAt);
    } catch (error) {
      return Promise.reject(storeFailure('idempotency', error));
    }
  };
  /** The store's answer, bounded by the call's deadline (callStore's checks, after begin's). */
  const bounded = (ctx: CallContext, answer: Promise<IdempotencyClaim>): Promise<IdempotencyClaim> =>
    callStore(() => answer, ctx.deadlineAt, now, 'idempotency') as Promise<IdempotencyClaim>;
  /** After the call gave up on the store: a claim that arrives later is released, its waiting stopped. */
  const gaveUp =
    (ctx: CallContext, key: string, answer: Promise<IdempotencyClaim>) =>
    (error: unknown): never => {
      answer.then((late) => {
        if (late.status === 'pending') abandon(late);
        else if (late.status === 'new') void start(() => store.fail(key, error, false, ctx.durable));
      }, noop);
      throw error;
    };
  /** {@link begin}, awaited: for the rare paths (a write's later generation, an undo). */
  const claim = (ctx: CallContext, key: string): MaybePromise<IdempotencyClaim> => {
    const answer = begin(ctx, key);
    return answer instanceof Promise ? bounded(ctx, answer).catch(gaveUp(ctx, key, answer)) : answer;
  };
  /**
   * A write whose key was undone: the first generation of the key not undone (`key#1`, `key#2`…),
   * for the store and for the tool. Once it succeeds, the undone generations before it are marked
   * again, so that none lapses before it (a lapsed one would let a later call take that effect again).
   * Closures here are fine: only a call whose write was undone comes this way.
   */
  const nextGeneration = async (next: Call, ctx: CallContext): Promise<unknown> => {
    const baseKey = ctx.storeKey ?? ctx.idempotencyKey!;
    const baseIdempotencyKey = ctx.idempotencyKey!;
    const ttlMs = ctx.tool.idempotencyTtlMs;
    for (let g = 1; ; g++) {
      const key = generationStoreKey(baseKey, g);
      const claimed = await claim(ctx, key);
      if (claimed.status === 'undone') continue;
      ctx.generation = g;
      ctx.idempotencyKey = generationKey(baseIdempotencyKey, g);
      if (ctx.storeKey !== undefined) ctx.storeKey = key;
      const remark = (): Promise<unknown> | undefined => {
        const writes: Promise<unknown>[] = [];
        for (let before = 0; before < g; before++) {
          const done = start(() => store.markUndone?.(generationStoreKey(baseKey, before), ttlMs));
          if (done) writes.push(done);
        }
        return writes.length > 0 ? Promise.all(writes) : undefined;
      };
      return decide(next, ctx, key, claimed, remark);
    }
  };
  /**
   * An undo of a write: the tool sees a key of the generation its write ran under (`…:compensate#1`),
   * the store keeps it under that write's own key, and once it succeeded (or had already), that
   * generation of the write's key is marked undone. A write another run already undid (a duplicate
   * answered with the same result) is not undone again: the write's key is read first. Closures here
   * are fine: only undos come this way.
   */
  const undo = async (next: Call, ctx: CallContext, write: UndoneWrite): Promise<unknown> => {
    const g = write.generation;
    const writeKey = generationStoreKey(write.storeKey, g);
    // Whether the write's result is still kept: then undos of it from every run share one claim.
    let kept = false;
    let at: number | undefined;
    if (store.markUndone !== undefined) {
      // Reading a key claims it only when nothing is kept there (its record lapsed): let go of it at once.
      const held = await claim(ctx, writeKey);
      if (held.status === 'undone') {
        ctx.cached = true;
        return undefined;
      }
      // The key holds this write while it holds the result kept for it: once its record lapsed (a run parked
      // past the key's TTL), another write may hold it, which this undo must neither share nor mark.
      if (held.status === 'done' && heldForWrite(held, write)) {
        kept = true;
        at = held.at;
      }
      if (held.status === 'pending') abandon(held);
      else if (held.status === 'new') void start(() => store.fail(writeKey, lapsed(writeKey), false, ctx.durable));
    }
    if (g > 0) {
      ctx.generation = g;
      ctx.idempotencyKey = generationKey(ctx.idempotencyKey!, g);
      if (!kept && ctx.storeKey !== undefined) ctx.storeKey = generationStoreKey(ctx.storeKey, g);
    }
    // While the write is kept, the store keeps the undo under the write's key, not the run's: two runs
    // answered with one write (a duplicate in flight) that fail together share one undo. A write whose
    // record lapsed is nobody else's: its undo stays the run's, so a later write under that key gets its own.
    if (kept) ctx.storeKey = undoStoreKey(writeKey);
    const key = ctx.storeKey ?? ctx.idempotencyKey!;
    // A write whose record lapsed is not marked: the mark would land on a write made after it. The store
    // marks only the result kept at `at`, so a key that lapses while the undo runs keeps a later write's.
    const mark = kept
      ? (): Promise<unknown> | undefined => start(() => store.markUndone?.(writeKey, write.ttlMs, at))
      : undefined;
    return decide(next, ctx, key, await claim(ctx, key), mark);
  };

  return (next) => (ctx) => {
    if (ctx.idempotencyKey === undefined) return next(ctx);
    // A durable run's step under its own key is kept by the run's journal: a second record would cost
    // two round trips and add nothing.
    if (keptByJournal(ctx)) return next(ctx);
    if (ctx.undoes !== undefined) return undo(next, ctx, ctx.undoes);
    // Every context made by callContext has its scoped key; the bare key is for a context made by hand.
    const key = ctx.storeKey ?? ctx.idempotencyKey;
    // With no closure when the store answers at once (memory).
    const answer = begin(ctx, key);
    if (!(answer instanceof Promise)) return decide(next, ctx, key, answer);
    return bounded(ctx, answer).then((c) => decide(next, ctx, key, c), gaveUp(ctx, key, answer));
  };
}
