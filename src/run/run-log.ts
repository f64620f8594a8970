// The log lines of runs: a run's end, a chain step's input, output and timeout, and the fields every
// line of a run carries. Masked like every text that leaves (docs/ARCHITECTURE.md, Secrets).
import type { Logger } from '../observe/logger.js';
import { maskedErr, type SecretMask } from '../observe/redact.js';
import type { RunResult } from '../observe/result.js';
import type { TraceStep } from '../observe/trace.js';
import type { StepOutcome } from './execution.js';
import type { RecordSite } from './trace-entry.js';

/**
 * The fields every log line of a run carries, then `extra`.
 *
 * @example
 * ```ts
 * logger.warn(logFields(run, { step: 'find' }), 'step find timed out');
 * ```
 */
export function logFields(site: RecordSite, extra: Record<string, unknown>): Record<string, unknown> {
  return { runId: site.runId, traceId: site.traceId, chain: site.chain, ...extra };
}

/**
 * The log line of a run's end; `mask` (failures) hides the run's secrets in the original error.
 *
 * @example
 * ```ts
 * logRunEnd(recorder.logger, run, result, mask);
 * ```
 */
export function logRunEnd(
  logger: Logger | undefined,
  site: RecordSite,
  result: RunResult,
  mask: SecretMask | undefined,
): void {
  if (!logger) return;
  // pino's convention: the original error under `err` (type and stack), masked like every text that leaves.
  if (result.status === 'failed') {
    const { error } = result;
    logger.error(
      logFields(site, {
        step: error.step,
        category: error.category,
        code: error.code,
        ...(error.cause !== undefined && { err: maskedErr(error.cause, mask!) }),
      }),
      `chain ${site.chain} failed: ${error.message}`,
    );
  } else
    logger.info(
      logFields(site, { status: result.status, durationMs: result.trace.totalLatencyMs }),
      `chain ${site.chain} ${result.status}`,
    );
}

/**
 * A chain step's log lines (to the recorder's logger): its input and output at `debug`, a timeout at `warn`.
 *
 * @example
 * ```ts
 * logStep(recorder, run, entry, outcome);
 * ```
 */
export function logStep(
  to: { readonly logger: Logger | undefined; redacted(value: unknown): unknown },
  site: RecordSite,
  entry: TraceStep,
  outcome: StepOutcome,
): void {
  const log = to.logger;
  if (!log) return;
  if (outcome.kind === 'ok')
    log.debug(
      logFields(site, { step: entry.id, input: entry.input, output: to.redacted(outcome.value) }),
      `step ${entry.id} ${entry.status}`,
    );
  else if (outcome.kind === 'failed' && outcome.error.category === 'timeout')
    log.warn(logFields(site, { step: entry.id, code: outcome.error.code }), `step ${entry.id} timed out`);
}
