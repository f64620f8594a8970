// What the idempotency stores share about a key that is not settled: waiting for a duplicate in
// flight in another process (Redis, PostgreSQL), and the failure a key whose write's outcome is
// unknown answers with (every store).
import { RunAbortReason, ToolFailure, type Classified } from '../errors/failure.js';
import type { IdempotencyClaim } from './types.js';

/** A claim on a key that another call holds. */
export type PendingClaim = Extract<IdempotencyClaim, { status: 'pending' }>;

/**
 * What a shared store keeps under a key, as one read sees it: `p` a call in flight, `d` its
 * result (`v`), `u` a write whose outcome is unknown (`e`, its failure); `undefined` when nothing
 * is kept (the call failed and released the key, or its marker lapsed).
 */
export type KeptOutcome =
  { s: 'p' } | { s: 'd'; v: unknown; t?: number } | { s: 'u'; e: Classified } | { s: 'x' } | undefined;

/** How long {@link waitForDuplicate} waits and how often it reads. */
export interface PendingWait {
  now: () => number;
  /** Past this, the waiter fails with `conflict`. */
  waitMs: number;
  /** Between two reads. */
  pollMs: number;
  /** How long the key of an unknown outcome stays claimed (for the message a waiter gets). */
  pendingTtlMs: number;
}

const never = (): Promise<never> => new Promise<never>(() => {});
const conflict = (message: string): Error => Object.assign(new Error(message), { status: 409 });

/**
 * Waits for a call in flight elsewhere by reading its key every `pollMs`: its result, its failure
 * (key gone: `conflict`), its unknown outcome, or after `waitMs` a `conflict`. `cancel` (the
 * waiter's deadline, cancel or `runner.close()`) stops it at once: no timer and no further read;
 * `settled` then stays pending. `read` reports its own failures as the store's.
 *
 * @example
 * ```ts
 * return waitForDuplicate(key, async () => parse(await redis.get(k)), {
 *   now,
 *   waitMs: 30_000,
 *   pollMs: 50,
 *   pendingTtlMs: 60_000,
 * });
 * ```
 */
export function waitForDuplicate(key: string, read: () => Promise<KeptOutcome>, wait: PendingWait): PendingClaim {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let wake: () => void = () => {};
  const poll = async (): Promise<unknown> => {
    const until = wait.now() + wait.waitMs;
    while (wait.now() < until) {
      await new Promise<void>((r) => {
        wake = r;
        timer = setTimeout(r, wait.pollMs);
      });
      if (stopped) return never();
      let kept: KeptOutcome;
      try {
        kept = await read();
      } catch (error) {
        if (stopped) return never();
        throw error;
      }
      if (stopped) return never();
      if (kept === undefined)
        throw conflict(`The duplicate call with idempotency key ${key} failed elsewhere; nothing was kept.`);
      if (kept.s === 'd') return kept.v;
      if (kept.s === 'u') throw stillUnknown(kept.e, wait.pendingTtlMs);
      // Done and undone before this read: its result is not this call's to go on with.
      if (kept.s === 'x')
        throw conflict(`The duplicate call with idempotency key ${key} was done elsewhere, then undone.`);
    }
    throw conflict(`A call with idempotency key ${key} is still in flight elsewhere after ${wait.waitMs} ms.`);
  };
  return {
    status: 'pending',
    settled: poll(),
    cancel: () => {
      stopped = true;
      clearTimeout(timer);
      wake();
    },
  };
}

/**
 * The failure kept for a write whose outcome is unknown, as plain JSON: a classified failure as
 * it is, anything else (a deadline, cancel or close that cut the call off) as `outcome_unknown`.
 *
 * @example
 * ```ts
 * await redis.set(k, JSON.stringify({ s: 'u', e: unknownOutcomeInfo(error) }), 'PX', pendingTtlMs, 'XX');
 * ```
 */
export function unknownOutcomeInfo(error: unknown): Classified {
  if (error instanceof ToolFailure) return error.info;
  return {
    category: 'timeout',
    code: 'outcome_unknown',
    message: error instanceof Error || error instanceof RunAbortReason ? error.message : String(error),
  };
}

/**
 * What a call gets for a key whose write's outcome is still unknown (no late answer yet): that
 * failure, never retryable, saying how long the key stays claimed and how to go on.
 *
 * @example
 * ```ts
 * throw stillUnknown(
 *   { category: 'timeout', code: 'attempt_timeout', message: 'Tool pay did not answer within 5000 ms.' },
 *   60_000,
 * );
 * ```
 */
export function stillUnknown(info: Classified, pendingTtlMs: number): ToolFailure {
  const lasts = pendingTtlMs % 1000 === 0 ? `${pendingTtlMs / 1000} s` : `${pendingTtlMs} ms`;
  return new ToolFailure({
    ...info,
    outcomeUnknown: true,
    message:
      `${info.message} A call with the same idempotency key is still waiting for its answer: ` +
      `until it comes (then this key returns it) or for up to ${lasts} after that call failed (pendingTtlMs), ` +
      'the key fails at once like this. ' +
      'To go on sooner, check whether it took effect, then run again with another runId or idempotencyKey.',
  });
}

/**
 * A claim that answers at once with the unknown outcome. Its rejection is marked handled: the
 * waiter attaches its handlers later, and it must never be an unhandled rejection.
 *
 * @example
 * ```ts
 * if (kept.s === 'u') return unknownClaim(kept.e, pendingTtlMs);
 * ```
 */
export function unknownClaim(info: Classified, pendingTtlMs: number): PendingClaim {
  const settled = Promise.reject(stillUnknown(info, pendingTtlMs));
  settled.catch(() => undefined);
  return { status: 'pending', settled };
}

/**
 * How long a store whose claims expire holds a new claim: its pending TTL, or until the call's
 * deadline (`holdUntil`) when that is later — a claim that lapsed while its call is still in flight
 * would let a duplicate run the call again.
 *
 * @example
 * ```ts
 * await redis.set(k, '{"s":"p"}', 'PX', holdMs(pendingTtlMs, holdUntil, Date.now()), 'NX');
 * ```
 */
export function holdMs(pendingTtlMs: number, holdUntil: number | undefined, now: number): number {
  // A deadline far off (or not finite) is not a reason to keep a dead process's claim forever: capped at a day.
  return holdUntil === undefined || !(holdUntil - now > pendingTtlMs)
    ? pendingTtlMs
    : Math.max(pendingTtlMs, Math.ceil(Math.min(holdUntil - now, MAX_HOLD_MS)));
}
/** The longest a claim is held for a call's deadline. */
const MAX_HOLD_MS = 24 * 3_600_000;
