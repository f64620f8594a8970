// Circuit breaker per tool: after N transient failures in a row, fail fast for a while, then probe once.
import type { ErrorCategory } from '../errors/categories.js';
import { classifyError, ToolFailure, type Classifier } from '../errors/classify.js';
import { callStore } from '../stores/guard.js';
import type { BreakerChange, BreakerDecision, BreakerStore } from '../stores/types.js';
import type { Call, CallContext, Policy } from '../run/pipeline.js';

/** Breaker settings. */
export interface BreakerOptions {
  /** Consecutive transient failures that open the breaker. Default 5. */
  threshold?: number;
  /** How long it stays open before one probe is let through. Default 60 s. */
  openMs?: number;
}

// Failures that say the service is unwell; user errors (not_found, invalid_input, …) do not count.
const COUNTS: ReadonlySet<ErrorCategory> = new Set(['internal', 'unavailable', 'network', 'timeout']);

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
  const report = (change: () => BreakerChange | Promise<BreakerChange>, ctx: CallContext): void => {
    let c: BreakerChange | Promise<BreakerChange>;
    try {
      c = change();
    } catch {
      return;
    }
    if (c instanceof Promise) void c.then((v) => report(() => v, ctx), () => undefined);
    else if (c) onChange?.(ctx.tool.name, c, ctx);
  };
  // The outcome handlers are bound to the call, not closures per call: a bound function keeps no
  // context while the attempt runs.
  function succeeded(this: CallContext, value: unknown): unknown {
    report(() => store.success(this.tool.name), this);
    return value;
  }
  function failed(this: CallContext, error: unknown, probe = false): never {
    const tool = this.tool.name;
    const { category } = error instanceof ToolFailure ? error.info : classifyError(error, classifiers);
    // A probe that never got its answer (cancel, deadline) counts as failed: the breaker reopens.
    if (COUNTS.has(category) || (probe && category === 'cancelled')) report(() => store.failure(tool, now(), threshold, openMs), this);
    else if (category !== 'cancelled') report(() => store.success(tool), this);
    throw error;
  }
  function probeFailed(this: CallContext, error: unknown): never {
    return failed.call(this, error, true);
  }
  const attempt = (next: Call, ctx: CallContext, decision: BreakerDecision): Promise<unknown> => {
    if (decision.status === 'open') {
      return Promise.reject(new ToolFailure({
        category: 'circuit_open',
        code: 'circuit_open',
        message: `The circuit breaker of tool ${ctx.tool.name} is open after repeated failures; retry in ${decision.retryAfterMs} ms.`,
        retryAfterMs: decision.retryAfterMs,
      }));
    }
    return next(ctx).then(succeeded.bind(ctx), (decision.status === 'probe' ? probeFailed : failed).bind(ctx));
  };
  return (next) => (ctx) => {
    const decision = callStore(() => store.acquire(ctx.tool.name, now(), openMs), ctx.deadlineAt, now, 'circuit-breaker');
    return decision instanceof Promise ? decision.then((d) => attempt(next, ctx, d)) : attempt(next, ctx, decision);
  };
}
