// Results decided before any step ran: bad input or context, a refused resume, a declined gate.
import type { Chain } from '../define/chain.js';
import type { ChainErrorInfo } from '../errors/categories.js';
import { toErrorInfo } from '../errors/messages.js';
import { maskError, secretMask } from '../observe/redact.js';
import type { InDoubtStep, RunResult } from '../observe/result.js';
import { settleTrace, type Trace, type TraceStep } from '../observe/trace.js';
import type { Calls } from './call-context.js';
import type { Recorder } from './recorder.js';
import { newTrace, type RecordSite } from './trace-entry.js';

/** The run an early result belongs to. */
export interface EarlySite extends RecordSite {
  readonly chain: string;
  /** The chain, when known: its metadata (timing, tool count) goes into the result. */
  readonly definition?: Chain;
  /** Epoch ms the run started (a declined resume keeps the original's); default: now. */
  readonly startedAt?: number;
  /** Trace entries of an earlier segment (a declined resume). */
  readonly priorTrace?: readonly TraceStep[];
}

/** What an early result is: any result body but a completion. */
export type EarlyBody =
  { status: 'declined'; step: string } | { status: 'in_doubt'; step: string; inDoubt: InDoubtStep[] } | EarlyFailure;
/** A failure decided before any step ran. */
export type EarlyFailure = {
  status: 'failed';
  error: ChainErrorInfo;
  completed: Record<string, unknown>;
  compensated: string[];
};

/**
 * A result decided before any step ran, with its trace, metadata and `chain:end`.
 *
 * @example
 * ```ts
 * return earlyResult(
 *   parts,
 *   { chain: chain.name, runId, traceId, sessionId: undefined },
 *   earlyFailure(calls, 'invalid_input', 'invalid_input', message),
 * );
 * ```
 */
export function earlyResult<O>(
  parts: { calls: Calls; recorder: Recorder },
  site: EarlySite,
  body: EarlyBody,
): RunResult<O> {
  const { calls, recorder } = parts;
  const startedAt = site.startedAt ?? calls.now();
  const ended = calls.now();
  const trace = newTrace(site, startedAt, ended, body.status as Trace['status'], [...(site.priorTrace ?? [])]);
  // A failure after journaled steps (an orphan ended at its deadline) is `partial`, its errors listed.
  if (body.status === 'failed') settleTrace(trace, 'failed', body.error);
  const metadata = recorder.metadata({
    ...(site.definition && { chain: site.definition }),
    actualDurationMs: 0,
    sessionTools: site.sessionId ? recorder.sessionTools(site.sessionId) : [],
    advice: [],
  });
  const result = { ...body, runId: site.runId, chain: site.chain, trace, metadata } as RunResult<O>;
  recorder.chainEnded(site, result);
  return result;
}

/**
 * An early failure's body. Early failures quote outside text (a getter's error, a store's answer):
 * masked by key pattern.
 *
 * @example
 * ```ts
 * earlyFailure(calls, 'confirmation', 'expired', 'The resume token has expired.');
 * ```
 */
export function earlyFailure(
  calls: Calls,
  category: ChainErrorInfo['category'],
  code: string,
  message: string,
  userMessage?: string,
): EarlyFailure {
  const error = toErrorInfo({ category, code, message }, userMessage ? { userMessage } : {}, calls.retryTable);
  return { status: 'failed', error: maskError(error, secretMask(calls.redact)), completed: {}, compensated: [] };
}
