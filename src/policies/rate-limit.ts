// Rate limits per tool, per tool or per key (`per: 'user'`, a `key` function): the policy that takes
// a slot from the tool's limiter (window-limiter.ts) before each attempt, honouring the deadline.
import type { RateLimitKeyCall, RateLimitSpec, Tool } from '../define/tool.js';
import { classifyError } from '../errors/classify.js';
import { RunAbortReason } from '../errors/failure.js';
import type { CallContext, Policy } from './types.js';
import { StoreFailure } from '../stores/guard.js';
import {
  LimiterRefusal,
  maxQueueOf,
  memoryLimiterStore,
  type Limiter,
  type LimiterStore,
  type Refusal,
  type Release,
} from './window-limiter.js';

/** Options of the rate-limit policy. */
export interface RateLimitPolicyOptions {
  now: () => number;
  store?: LimiterStore;
  /** Called when an attempt has to wait for a slot (for logs). */
  onWait?: (ctx: CallContext) => void;
}

/** The shared key of the calls a per-key limit finds no key for. */
const ANONYMOUS = 'anonymous';

/**
 * The key a per-key limit counts a call under: the spec's `key` function's answer, or for
 * `per: 'user'` (sugar for `key: (call) => call.context.userId`) the context's `userId`. No
 * non-empty string — or a key function that throws — is the shared `'anonymous'` key; `undefined`
 * means one limit for the whole tool (`per: 'global'`).
 *
 * @example
 * ```ts
 * limitKey({ limit: 5, intervalMs: 1000, key: (call) => String(call.context.tenant ?? '') }, ctx);
 * // 'acme' (or 'anonymous')
 * ```
 */
function limitKey(spec: Readonly<RateLimitSpec>, ctx: CallContext): string | undefined {
  let key: unknown;
  if (spec.key !== undefined) {
    const { tool, runId, step = tool.name, sessionId, context } = ctx;
    const call: RateLimitKeyCall =
      sessionId === undefined
        ? { tool: tool.name, runId, step, context }
        : { tool: tool.name, runId, step, sessionId, context };
    try {
      key = spec.key(call);
    } catch {
      key = undefined; // a broken key function must not lose the call: it is limited with the keyless ones
    }
  } else if (spec.per === 'user') {
    key = ctx.context.userId; // the sugar, read directly: no call object per attempt
  } else {
    return undefined;
  }
  if (typeof key === 'string') return key !== '' ? key : ANONYMOUS;
  // A numeric user id (a database serial) is that user's own key, not the anonymous one all share.
  if ((typeof key === 'number' && Number.isFinite(key)) || typeof key === 'bigint') return String(key);
  return ANONYMOUS;
}

/**
 * Takes one slot per attempt (the downstream API counts every attempt) before the timeout starts,
 * so time queued is not charged to the tool. A full queue fails at once with `queue_full`; a slot
 * that cannot come before the deadline fails at once with `rate_limited` and `retryAfterMs`. Every
 * way of not getting a slot is a {@link LimiterRefusal}: the breaker does not count it.
 */
export function rateLimitPolicy(options: RateLimitPolicyOptions): { policy: Policy; close(): Promise<void> } {
  const store = options.store ?? memoryLimiterStore(options.now);
  const ids = new WeakMap<Tool, string>();
  const limiterFor = (ctx: CallContext, spec: RateLimitSpec): Limiter => {
    let id = ids.get(ctx.tool);
    if (id === undefined) ids.set(ctx.tool, (id = `chainkit:${ctx.tool.name}`));
    const key = limitKey(spec, ctx);
    return key === undefined ? store.limiter(id, spec) : store.limiter(id, spec, key);
  };

  // Bound to the call (not a closure per call). Why a wait for a slot ended without one.
  function notAdmitted(this: CallContext, reason: unknown): never {
    // A store failure keeps its own kind (never retried, never counted); a refusal is already one.
    if (reason instanceof LimiterRefusal || reason instanceof StoreFailure) throw reason;
    if (reason instanceof RunAbortReason && reason.kind === 'deadline') {
      throw new LimiterRefusal({
        category: 'rate_limited',
        code: 'rate_limit_wait',
        message: `The deadline came while waiting for a ${this.tool.name} rate-limit slot.`,
      });
    }
    throw new LimiterRefusal(classifyError(reason));
  }

  const refusal = (ctx: CallContext, spec: RateLimitSpec, r: Refusal): LimiterRefusal =>
    r.refused === 'queue_full'
      ? new LimiterRefusal({
          category: 'queue_full',
          code: 'queue_full',
          message:
            `Too many calls to ${ctx.tool.name} are waiting (maxQueue ${maxQueueOf(spec)}); ` +
            'the call was not queued.',
          retryAfterMs: spec.intervalMs,
        })
      : new LimiterRefusal({
          category: 'rate_limited',
          code: 'rate_limit_wait',
          message:
            `The next ${ctx.tool.name} slot (limit ${spec.limit} per ${spec.intervalMs} ms) ` +
            'comes after the deadline.',
          retryAfterMs: Math.max(0, Math.ceil(r.waitMs)),
        });

  const policy: Policy = (next) => (ctx) => {
    const spec = ctx.tool.rateLimit;
    if (!spec) return next(ctx);
    if (ctx.run.aborted) return Promise.reject(new LimiterRefusal(classifyError(ctx.run.reason)));
    let slot: ReturnType<Limiter['acquire']>;
    try {
      slot = limiterFor(ctx, spec).acquire(ctx.run, ctx.deadlineAt, options.onWait && (() => options.onWait!(ctx)));
    } catch (error) {
      return Promise.reject(new LimiterRefusal(classifyError(error))); // a custom store that throws
    }
    if (typeof slot === 'function') return runWith(slot);
    if (slot instanceof Promise)
      return slot.then(
        (s) => (typeof s === 'function' ? runWith(s) : Promise.reject(refusal(ctx, spec, s))),
        notAdmitted.bind(ctx),
      );
    return Promise.reject(refusal(ctx, spec, slot));

    function runWith(release: Release): Promise<unknown> {
      return next(ctx).then(
        (value) => {
          release();
          return value;
        },
        (error: unknown) => {
          release();
          throw error;
        },
      );
    }
  };

  return { policy, close: async () => store.close?.() };
}
