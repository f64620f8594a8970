// Timer arithmetic shared by every layer that waits until a deadline.

/** The longest delay `setTimeout` honours (2^31 − 1 ms); a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The `setTimeout` delay that ends at `deadlineAt`: never negative, never past what a timer can hold. */
export function delayUntil(deadlineAt: number, now: () => number): number {
  return Math.max(0, Math.min(deadlineAt - now(), MAX_TIMER_MS));
}

/** How long one call to a store (checkpoints, runs) may take to answer; never past the run's deadline. */
export const STORE_WAIT_MS = 10_000;
