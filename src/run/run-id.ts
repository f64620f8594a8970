// Run ids are the caller's: checked before any store is asked.
import { ToolFailure } from '../errors/failure.js';

/** The longest run id accepted. */
const MAX_RUN_ID = 255;
// C0 and C1 control characters, DEL, the line and paragraph separators, and lone surrogates (with
// the u flag a pair is one code point): UTF-8 drivers write any lone surrogate as U+FFFD, so two such
// ids would be one key in Redis or PostgreSQL.
const REFUSED = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]|\p{Cs}/u;

/**
 * Whether `runId` is one chainkit accepts: a string of 1–255 printable characters (no control
 * characters, no lone surrogates). Reads nothing but `typeof` and the string itself: an object or a
 * throwing `toString` is refused.
 *
 * @example
 * ```ts
 * if (!isValidRunId(opts.runId)) return invalidRunId();
 * ```
 */
export function isValidRunId(runId: unknown): runId is string {
  return typeof runId === 'string' && runId.length >= 1 && runId.length <= MAX_RUN_ID && !REFUSED.test(runId);
}

/** The failure of an invalid run id. */
export const INVALID_RUN_ID =
  'A run id must be a string of 1 to 255 printable characters (no control characters or lone surrogates).';

/** Throws the `invalid_input` / `invalid_run_id` failure for a run id that is not {@link isValidRunId}. */
export function checkRunId(runId: unknown): void {
  if (!isValidRunId(runId))
    throw new ToolFailure({ category: 'invalid_input', code: 'invalid_run_id', message: INVALID_RUN_ID });
}
