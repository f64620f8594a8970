// Per-attempt timeout (p-timeout): measures the tool call only, aborts the attempt's signal, and
// enforces the chain deadline by never letting an attempt run past it.
import pTimeout, { type ClearablePromise } from 'p-timeout';
import { RunAbortReason, ToolFailure } from '../errors/classify.js';
import { AbortScope } from '../run/abort.js';
import type { Policy } from '../run/pipeline.js';

// p-timeout rejects with this exact instance on timeout, so it is recognised by identity.
const TIMED_OUT = new Error('attempt timed out');

/**
 * Bounds each attempt by `ctx.timeoutMs`, clamped to the time left before the deadline, so the
 * deadline needs no timer of its own. When the clamp was what fired, the whole run is aborted with
 * `deadline_exceeded`.
 */
export function timeoutPolicy(now: () => number): Policy {
  return (next) => (ctx) => {
    const run = ctx.run;
    if (run.aborted) return Promise.reject(run.reason);
    const left = ctx.deadlineAt - now();
    if (left <= 0) {
      const reason = deadline(ctx.chain);
      run.abort(reason);
      return Promise.reject(reason);
    }
    const ms = Math.min(ctx.timeoutMs, left);
    const attempt = new AbortScope();
    ctx.attemptScope = attempt;
    const pending = next(ctx);
    // p-timeout builds a stack-carrying TimeoutError on every call; we never show that stack, and
    // capturing it dominated the per-call cost, so it is built without one.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    let guarded: ClearablePromise<unknown>;
    try {
      guarded = pTimeout(pending, { milliseconds: ms, message: TIMED_OUT });
    } finally {
      Error.stackTraceLimit = limit;
    }
    // A run abort (deadline, cancel, close) settles the attempt at once — so every policy above
    // sees the outcome — aborts the tool's signal and clears p-timeout's timer.
    return new Promise((resolve, reject) => {
      const off = run.onAbort((reason) => {
        attempt.abort(reason);
        guarded.clear();
        reject(reason);
      });
      guarded.then(
        (value) => {
          off();
          resolve(value);
        },
        (error: unknown) => {
          off();
          if (error !== TIMED_OUT) return reject(error);
          if (ms < ctx.timeoutMs) {
            const reason = deadline(ctx.chain);
            attempt.abort(reason);
            run.abort(reason); // ends concurrent steps too
            return reject(reason);
          }
          const failure = new ToolFailure({
            category: 'timeout',
            code: 'attempt_timeout',
            message: `Tool ${ctx.tool.name} did not answer within ${ctx.timeoutMs} ms (attempt ${ctx.attempt}).`,
          });
          attempt.abort(failure);
          reject(failure);
        },
      );
    });
  };
}

function deadline(chain: string | undefined): RunAbortReason {
  return new RunAbortReason('deadline', chain ? `Chain ${chain} passed its deadline.` : 'The call passed its deadline.');
}
