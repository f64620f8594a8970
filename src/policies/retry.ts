// Retries by category: the table in docs/guides/policies.md (Errors) decides whether and how long to wait, per failure.
// A loop of its own rather than p-retry: p-retry's one backoff rule, Math.random jitter and deadline-blind
// waits cannot state a table per category, and its wrapper adds work to every failed attempt.
import { DEFAULT_RETRY_TABLE, type ErrorCategory, type RetryRule, type RetryTable } from '../errors/categories.js';
import { classifyError } from '../errors/classify.js';
import { ToolFailure, type Classified, type Classifier } from '../errors/failure.js';
import { sleep } from './abort.js';
import type { Call, CallContext, Policy } from './types.js';
import { StoreFailure } from '../stores/guard.js';
import { MAX_TIMER_MS } from '../util/timer.js';

/** The longest a timed-out attempt's timeout grows to on retry. */
const MAX_RETRY_TIMEOUT_MS = 10_000;
/** Jitter added to a Retry-After wait. */
const RATE_LIMIT_JITTER_MS = 1000;
/** Backoff delays grow by up to this fraction of themselves, from the runner's `random`. */
const BACKOFF_JITTER = 0.25;
const TRANSIENT: readonly ErrorCategory[] = ['internal', 'unavailable', 'network'];
// Connection drops that can come after the request was sent (an MCP session closed mid-call among them).
// Refused connections and DNS failures (nothing sent) stay retryable for writes; so do network failures
// known only by their message.
const CUT_OFF: ReadonlySet<string> = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'connection_closed']);

/**
 * Whether a failed attempt of a write may still have taken effect: it timed out (by its attempt
 * timeout, a 504, `ETIMEDOUT`, an in-band `timeout`) or its connection dropped mid-call.
 *
 * @example
 * ```ts
 * outcomeUnknown({ category: 'network', code: 'ECONNRESET', message: 'read ECONNRESET' }); // true
 * outcomeUnknown({ category: 'network', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' });
 * // false: nothing was sent
 * ```
 */
function outcomeUnknown(failure: Classified): boolean {
  return failure.category === 'timeout' || (failure.category === 'network' && CUT_OFF.has(failure.code));
}

/**
 * The failure of a write whose outcome is unknown: not retried, and
 * said so (docs/guides/policies.md, no blind retry of a write).
 */
function unknownOutcome(ctx: CallContext, failure: ToolFailure): ToolFailure {
  const { info } = failure;
  return new ToolFailure({
    ...info,
    message:
      `${info.message} The outcome is unknown: ${ctx.tool.effect} tool ${ctx.tool.name} may have taken effect, ` +
      'so it was not retried. Check before calling it again, ' +
      'or declare the tool `idempotent: true` if it honours ToolCall.idempotencyKey.',
    outcomeUnknown: true,
  });
}

/** Options of the retry policy. */
export interface RetryPolicyOptions {
  random: () => number;
  now: () => number;
  classifiers?: readonly Classifier[];
  /** Called before each wait (for `step:retry` events and logs). */
  onRetry?: (ctx: CallContext, failure: Classified, delayMs: number) => void;
  /**
   * Called as each wait starts (a durable run shows `retrying`);
   * what it returns is called when the wait ends, however it ends.
   */
  onWait?: (ctx: CallContext, delayMs: number) => (() => void) | undefined;
}

/**
 * The retry table for a call: the runner's table, with a tool's or step's override applied to
 * the transient categories, or no retries at all for `false`.
 */
export function resolveRetryTable(
  base: Readonly<RetryTable>,
  ...overrides: (Partial<RetryRule> | false | undefined)[]
): Readonly<RetryTable> {
  let table = base;
  for (const o of overrides) {
    if (o === undefined) continue;
    if (o === false) return {};
    const next: RetryTable = { ...table };
    for (const c of TRANSIENT) next[c] = { ...(DEFAULT_RETRY_TABLE[c] as RetryRule), ...table[c], ...o };
    table = next;
  }
  return table;
}

/**
 * The wait before retry number `n` (0-based) of a failure: Retry-After wins for rate limits; for other
 * failures (a 503's Retry-After) the server is not asked again before it said, nor before the backoff.
 */
function retryDelay(rule: RetryRule, n: number, failure: Classified, random: () => number): number {
  // A classifier's own verdict may carry any number: only a real wait counts.
  const told = failure.retryAfterMs;
  const serverMs = typeof told === 'number' && Number.isFinite(told) && told >= 0 ? told : undefined;
  if (failure.category === 'rate_limited') {
    return (serverMs ?? rule.minDelayMs) + Math.round(random() * RATE_LIMIT_JITTER_MS);
  }
  const base = Math.min(rule.maxDelayMs, rule.minDelayMs * rule.factor ** n);
  const backoff = Math.round(base * (1 + BACKOFF_JITTER * random()));
  if (serverMs === undefined || serverMs <= backoff) return backoff;
  // The server's time, spread as a rate limit's is: its callers do not all come back at the same instant.
  return serverMs + Math.round(random() * RATE_LIMIT_JITTER_MS);
}

/**
 * Retries failed attempts per the call's retry table. A wait that would end after the deadline is
 * not taken: the call fails at once with the last error (and `retryAfterMs` for rate limits).
 */
export function retryPolicy(options: RetryPolicyOptions): Policy {
  const { random, now, classifiers, onRetry, onWait } = options;
  const asFailure = (error: unknown): ToolFailure =>
    error instanceof ToolFailure ? error : new ToolFailure(classifyError(error, classifiers));

  /** Why the retries stop (what the call then fails with), or the wait before the next attempt. */
  const decide = (
    ctx: CallContext,
    failure: ToolFailure,
    used: Partial<Record<ErrorCategory, number>>,
  ): ToolFailure | number => {
    if (ctx.run.aborted) return new ToolFailure(classifyError(ctx.run.reason));
    // chainkit's own store is down, not the tool: a retry would only hit the same store later.
    if (failure instanceof StoreFailure) return failure;
    const info = failure.info;
    // A write that may have happened is retried only by a tool that dedupes on its idempotency key.
    if (ctx.tool.effect !== 'read' && !ctx.tool.idempotent && outcomeUnknown(info)) return unknownOutcome(ctx, failure);
    const rule = ctx.retry[info.category];
    const n = used[info.category] ?? 0;
    if (!rule || n >= rule.retries) return failure;
    const delay = retryDelay(rule, n, info, random);
    // Past the deadline, or past what a timer holds (a Retry-After of weeks): the call fails now, with the wait.
    if (now() + delay >= ctx.deadlineAt || delay > MAX_TIMER_MS) {
      return info.category === 'rate_limited' && info.retryAfterMs === undefined
        ? new ToolFailure({ ...info, retryAfterMs: delay })
        : failure;
    }
    used[info.category] = n + 1;
    if (info.category === 'timeout')
      ctx.timeoutMs = Math.min(ctx.timeoutMs * 2, Math.max(MAX_RETRY_TIMEOUT_MS, ctx.timeoutMs));
    onRetry?.(ctx, info, delay);
    return delay;
  };

  // The attempts after the first: the table decides each time, so the loop is ours (see the file's opening note).
  async function retryAfterFirst(next: Call, ctx: CallContext, first: ToolFailure): Promise<unknown> {
    const used: Partial<Record<ErrorCategory, number>> = {};
    let failure = first;
    for (let attempt = 2; ; attempt++) {
      const verdict = decide(ctx, failure, used);
      if (typeof verdict !== 'number') throw verdict;
      const waited = verdict > 0 ? onWait?.(ctx, verdict) : undefined;
      if (waited) {
        try {
          await sleep(verdict, ctx.run);
        } finally {
          waited();
        }
      } else if (verdict > 0) await sleep(verdict, ctx.run); // rejects with the run's own reason if it aborts
      ctx.attempt = attempt;
      try {
        return await next(ctx);
      } catch (error) {
        failure = asFailure(error);
      }
    }
  }

  return (next) => {
    // Bound to the call, not a closure per call: a bound function keeps no context while it runs.
    function afterFirst(this: CallContext, error: unknown): Promise<unknown> {
      return retryAfterFirst(next, this, asFailure(error));
    }
    return (ctx) => {
      // The first attempt runs directly: retry bookkeeping is only paid once something failed.
      ctx.attempt = 1;
      return next(ctx).then(undefined, afterFirst.bind(ctx));
    };
  };
}
