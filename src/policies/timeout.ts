// Per-attempt timeout (p-timeout): measures the tool call only, and aborts the attempt's signal.
import pTimeout from 'p-timeout';
import { ToolFailure } from '../errors/classify.js';
import type { Policy } from '../run/pipeline.js';

// p-timeout rejects with this exact instance on timeout, so it is recognised by identity.
const TIMED_OUT = new Error('attempt timed out');

/**
 * Bounds each attempt by `ctx.timeoutMs`; the run's signal (deadline, cancel) ends it at once.
 * The attempt's own signal is aborted in both cases so the tool can stop its work.
 */
export const timeoutPolicy: Policy = (next) => async (ctx) => {
  const run = ctx.signal;
  if (run.aborted) throw run.reason;
  const controller = new AbortController();
  ctx.attemptSignal = controller.signal;
  const onRunAbort = (): void => controller.abort(run.reason);
  run.addEventListener('abort', onRunAbort);
  const attempt = next(ctx);
  // p-timeout builds a stack-carrying TimeoutError on every call; we never show that stack, and
  // capturing it dominated the per-call cost, so it is built without one.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  let guarded: Promise<unknown>;
  try {
    guarded = pTimeout(attempt, { milliseconds: ctx.timeoutMs, signal: run, message: TIMED_OUT });
  } finally {
    Error.stackTraceLimit = limit;
  }
  try {
    return await guarded;
  } catch (error) {
    if (error !== TIMED_OUT) throw error;
    const failure = new ToolFailure({
      category: 'timeout',
      code: 'attempt_timeout',
      message: `Tool ${ctx.tool.name} did not answer within ${ctx.timeoutMs} ms (attempt ${ctx.attempt}).`,
    });
    controller.abort(failure);
    throw failure;
  } finally {
    run.removeEventListener('abort', onRunAbort);
  }
};
