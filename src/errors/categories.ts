// The error vocabulary of chainkit: categories, the data shape of a failure, and the default retry table.

/** What kind of failure happened; drives retries, user messages and advice. */
export type ErrorCategory =
  | 'invalid_input'
  | 'validation'
  | 'not_found'
  | 'ambiguous'
  | 'permission_denied'
  | 'authentication_required'
  | 'conflict'
  | 'rate_limited'
  | 'timeout'
  | 'unavailable'
  | 'internal'
  | 'network'
  | 'circuit_open'
  | 'queue_full'
  | 'cancelled'
  | 'confirmation'
  | 'unknown';

/**
 * Every category, in a stable order (useful for exhaustive tables and docs).
 *
 * @example
 * ```ts
 * const isCategory = (s: string): s is ErrorCategory => (ERROR_CATEGORIES as readonly string[]).includes(s);
 * ```
 */
export const ERROR_CATEGORIES: readonly ErrorCategory[] = [
  'invalid_input',
  'validation',
  'not_found',
  'ambiguous',
  'permission_denied',
  'authentication_required',
  'conflict',
  'rate_limited',
  'timeout',
  'unavailable',
  'internal',
  'network',
  'circuit_open',
  'queue_full',
  'cancelled',
  'confirmation',
  'unknown',
];

/** An alternative an agent or app could try instead of the failed action. */
export interface Alternative {
  suggestion: string;
  reason: string;
  estimatedDurationMs?: number;
}

/**
 * The circumstances of a failed call: numbers only, so nothing in it can carry a secret of the input.
 * Present when a tool call was made (not for a failure before any call, e.g. invalid input).
 */
export interface ErrorContext {
  /** The per-attempt timeout that applied to the last attempt, in ms (a retried timeout doubles it). */
  timeoutMs?: number;
  /** The size of the call's input in characters (its JSON text; a string input's length). */
  inputSize?: number;
  /** The attempt that failed last (1 for the first). */
  attempt?: number;
}

/** A failure as data: what went wrong, where, and what to do about it. */
export interface ChainErrorInfo {
  category: ErrorCategory;
  code: string;
  /** For developers; never includes secrets or raw stack traces. */
  message: string;
  /** Safe to show an end user. */
  userMessage: string;
  /** Recovery advice for an agent or user. */
  suggestions: string[];
  alternatives: Alternative[];
  retryable: boolean;
  retryAfterMs?: number;
  step?: string;
  tool?: string;
  attempts: number;
  candidates?: unknown[];
  /** The timeout that applied, the input's size and the attempt, when a tool was called. */
  context?: ErrorContext;
  /**
   * What the tool (or compute step) originally threw, where there was such an error. Non-enumerable:
   * for logs and debugging in this process, never serialized into traces, events or stores.
   */
  cause?: unknown;
}

/**
 * How one category is retried: `retries` more attempts, waiting `minDelayMs × factor^n`
 * (capped at `maxDelayMs`) plus jitter before each.
 */
export interface RetryRule {
  retries: number;
  minDelayMs: number;
  factor: number;
  maxDelayMs: number;
}

/** Retry rules per category; a category that is absent (or has `retries: 0`) is not retried. */
export type RetryTable = Partial<Record<ErrorCategory, RetryRule>>;

/**
 * The default retry table of the API contract. `timeout` retries once with the attempt timeout
 * doubled; `rate_limited` waits for Retry-After (else `minDelayMs`) plus up to 1 s of jitter.
 *
 * @example
 * ```ts
 * DEFAULT_RETRY_TABLE.internal; // { retries: 3, minDelayMs: 100, factor: 2, maxDelayMs: 1000 }
 * ```
 */
export const DEFAULT_RETRY_TABLE: Readonly<RetryTable> = Object.freeze({
  internal: { retries: 3, minDelayMs: 100, factor: 2, maxDelayMs: 1000 },
  unavailable: { retries: 2, minDelayMs: 500, factor: 2, maxDelayMs: 2000 },
  network: { retries: 2, minDelayMs: 500, factor: 2, maxDelayMs: 2000 },
  timeout: { retries: 1, minDelayMs: 0, factor: 1, maxDelayMs: 0 },
  rate_limited: { retries: 1, minDelayMs: 60_000, factor: 1, maxDelayMs: 60_000 },
});

/** Whether a category is worth retrying at all under the given table. */
export function isRetryableCategory(
  category: ErrorCategory,
  table: Readonly<RetryTable> = DEFAULT_RETRY_TABLE,
): boolean {
  return Object.hasOwn(table, category) && (table[category]?.retries ?? 0) > 0;
}
