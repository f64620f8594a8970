// Run ids are the caller's: checked before any store is asked.
import { ToolFailure } from '../errors/failure.js';

/** The longest run id accepted. */
const MAX_RUN_ID = 255;
// C0 and C1 control characters, DEL, and the line and paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

/**
 * Whether `runId` is one chainkit accepts: a string of 1–255 printable characters (no control
 * characters). Reads nothing but `typeof` and the string itself: an object or a throwing `toString` is refused.
 *
 * @example
 * ```ts
 * if (!isValidRunId(opts.runId)) return invalidRunId();
 * ```
 */
export function isValidRunId(runId: unknown): runId is string {
  return typeof runId === 'string' && runId.length >= 1 && runId.length <= MAX_RUN_ID && !CONTROL.test(runId);
}

/** The failure of an invalid run id. */
export const INVALID_RUN_ID = 'A run id must be a string of 1 to 255 printable characters (no control characters).';

/** Throws the `invalid_input` / `invalid_run_id` failure for a run id that is not {@link isValidRunId}. */
export function checkRunId(runId: unknown): void {
  if (!isValidRunId(runId))
    throw new ToolFailure({ category: 'invalid_input', code: 'invalid_run_id', message: INVALID_RUN_ID });
}
