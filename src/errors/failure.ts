// What a classified failure is: the verdict (`Classified`), the error that carries one through the
// call pipeline (`ToolFailure`), and why a run's signal was aborted (`RunAbortReason`).
import type { ErrorCategory } from './categories.js';

/** The classifier's verdict on one failure, before step/tool/attempt details are added. */
export interface Classified {
  category: ErrorCategory;
  code: string;
  message: string;
  retryAfterMs?: number;
  /** What to tell an end user, when the code has its own words (a domain's, see `codeClassifier`). */
  userMessage?: string;
  /** A write/destructive call that may or may not have taken effect (set by the retry policy): never retryable. */
  outcomeUnknown?: boolean;
}

/** A classifier returns a verdict, or `undefined` to let the next one decide. */
export type Classifier = (error: unknown) => Classified | undefined;

/**
 * A failure that already carries its classification. Thrown inside the call pipeline so every
 * layer (and a logger that meets one) sees a real `Error`, whatever the tool threw.
 */
export class ToolFailure extends Error {
  override readonly name = 'ToolFailure';
  readonly info: Classified;
  /** @param cause What the tool really threw (kept as the standard `cause`). */
  constructor(info: Classified, cause?: unknown) {
    // Control flow, never shown with a stack: capturing one would dominate the cost of a retry.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(info.message, cause === undefined ? undefined : { cause });
    Error.stackTraceLimit = limit;
    this.info = info;
  }
}

/**
 * Keeps what a tool originally threw on a {@link ChainErrorInfo}-like object as a non-enumerable
 * `cause`: there for `result.error.cause` and loggers, absent from JSON, traces and stores.
 *
 * @example
 * ```ts
 * keepCause(info, error); // info.cause === the tool's own Error
 * ```
 */
export function keepCause(info: object, error: unknown): void {
  const cause = error instanceof ToolFailure ? error.cause : error;
  if (cause !== undefined)
    Object.defineProperty(info, 'cause', { value: cause, enumerable: false, writable: true, configurable: true });
}

/** Why a run's signal was aborted; identity-checked by the classifier. */
export class RunAbortReason {
  /** `code`: the failure's code when it is not the kind's own (`run_cancelled` for `runner.cancel`). */
  constructor(
    readonly kind: 'deadline' | 'cancelled' | 'closed',
    readonly message: string,
    readonly code?: string,
  ) {}
}
