// Circuit breaker per tool: after N transient failures in a row, fail fast for a while, then probe once.
import type { ErrorCategory } from '../errors/categories.js';
import { classifyError } from '../errors/classify.js';
import { RunAbortReason, ToolFailure, type Classifier } from '../errors/failure.js';
import { callStore, StoreFailure } from '../stores/guard.js';
import { LimiterRefusal } from './window-limiter.js';
import type { BreakerChange, BreakerDecision, BreakerStore } from '../stores/types.js';
import type { Call, CallContext, Policy } from './types.js';

/** Breaker settings. */
export interface BreakerOptions {
  /** Consecutive transient failures that open the breaker. Default 5. */
  threshold?: number;
  /** How long it stays open before one probe is let through. Default 60 s. */
  openMs?: number;
}

// Failures that say the service is unwell (a remote 429 included: it is overloaded); user errors
// (not_found, invalid_input, …) do not count, nor do chainkit's own limiter refusals and store
// failures (see `failed`).
const COUNTS: ReadonlySet<ErrorCategory> = new Set(['internal', 'unavailable', 'network', 'timeout', 'rate_limited']);

/** Options of the breaker policy. */
export interface BreakerPolicyOptions extends Required<BreakerOptions> {
  store: BreakerStore;
  now: () => number;
  classifiers?: readonly Classifier[];
  /** Called when a breaker opens or closes. */
  onChange?: (tool: string, change: Exclude<BreakerChange, undefined>, ctx: CallContext) => void;
}

/** Counts per attempt; `circuit_open` is never retried. */
export function breakerPolicy(options: BreakerPolicyOptions): Policy {
  const { store, now, threshold, openMs, classifiers, onChange } = options;
  // Recording an outcome is best effort: a store hiccup must not turn a result into a failure.
  const report = (change: BreakerChange | Promise<BreakerChange>, ctx: CallContext): void => {
    if (change instanceof Promise)
      void change.then(
        (v) => report(v, ctx),
        () => undefined,
      );
    else if (change) onChange?.(ctx.tool.name, change, ctx);
  };
  // Called directly, not through a closure per call: every successful attempt records one.
  const succeededAt = (ctx: CallContext): void => {
    let change: BreakerChange | Promise<BreakerChange>;
    try {
      change = store.success(ctx.tool.name);
    } catch {
      return;
    }
    report(change, ctx);
  };
  const failedAt = (ctx: CallContext): void => {
    let change: BreakerChange | Promise<BreakerChange>;
    try {
      change = store.failure(ctx.tool.name, now(), threshold, openMs);
    } catch {
      return;
    }
    report(change, ctx);
  };
  // The outcome handlers are bound to the call, not closures per call: a bound function keeps no
  // context while the attempt runs.
  function succeeded(this: CallContext, value: unknown): unknown {
    succeededAt(this);
    return value;
  }
  function failed(this: CallContext, error: unknown, probe = false): never {
    // chainkit's own limiter, or its own store (e.g. the rate-limit store), kept the attempt from the
    // tool: no verdict on the tool. A probe it kept back is given back, so the next call probes (one
    // user's limit or a store hiccup must not hold the breaker open for everyone).
    if (error instanceof LimiterRefusal || error instanceof StoreFailure) {
      if (probe) giveBack(this);
      throw error;
    }
    // The run cut the call off (its deadline, a cancel, close, a sibling step's failure): that says nothing of
    // the tool (a short deadline must not open the breaker for everyone). A probe cut off is given back, so the
    // next call probes, unless the tool had it until the deadline: no answer in all that time reopens the breaker.
    if (error instanceof RunAbortReason) {
      if (probe) (error.kind === 'deadline' && this.reached === true ? failedAt : giveBack)(this);
      throw error;
    }
    const { category } = error instanceof ToolFailure ? error.info : classifyError(error, classifiers);
    if (COUNTS.has(category) || (probe && category === 'cancelled')) failedAt(this);
    else if (category !== 'cancelled') succeededAt(this);
    throw error;
  }
  function giveBack(ctx: CallContext): void {
    const tool = ctx.tool.name;
    if (!store.release) {
      // a store without `release`: reopen, as for a lost probe
      failedAt(ctx);
      return;
    }
    try {
      const done = store.release(tool);
      if (done instanceof Promise) done.then(undefined, () => undefined);
    } catch {
      // best effort, as every breaker record
    }
  }
  function probeFailed(this: CallContext, error: unknown): never {
    return failed.call(this, error, true);
  }
  const attempt = (next: Call, ctx: CallContext, decision: BreakerDecision): Promise<unknown> => {
    if (decision.status === 'open') {
      return Promise.reject(
        new ToolFailure({
          category: 'circuit_open',
          code: 'circuit_open',
          message:
            `The circuit breaker of tool ${ctx.tool.name} is open after repeated failures; ` +
            `retry in ${decision.retryAfterMs} ms.`,
          retryAfterMs: decision.retryAfterMs,
        }),
      );
    }
    return next(ctx).then(succeeded.bind(ctx), (decision.status === 'probe' ? probeFailed : failed).bind(ctx));
  };
  return (next) => (ctx) => {
    const decision = callStore(
      () => store.acquire(ctx.tool.name, now(), openMs),
      ctx.deadlineAt,
      now,
      'circuit-breaker',
    );
    return decision instanceof Promise
      ? decision.then(
          (d) => attempt(next, ctx, d),
          (error: unknown) => runEnded(ctx, now, error),
        )
      : attempt(next, ctx, decision);
  };
}

/** A store call cut off because the run ended (its deadline, a cancel) reports the run's reason, not the store. */
function runEnded(ctx: CallContext, now: () => number, error: unknown): never {
  if (ctx.run.aborted) throw ctx.run.reason;
  throw now() >= ctx.deadlineAt
    ? new RunAbortReason('deadline', `The call to ${ctx.tool.name} reached its run's deadline.`)
    : error;
}
