// Per-attempt timeout: measures the tool call only, aborts the attempt's signal, and enforces the
// chain deadline by never letting an attempt run past it.
// Written by hand, not with p-timeout: p-timeout keeps ~1.5 KB per call in flight (an async
// wrapper, a finally chain, an eager TimeoutError, a timers object) and settles on a run's abort
// only through a real AbortSignal; one Attempt object below does all of it.
import { RunAbortReason, ToolFailure } from '../errors/failure.js';
import { AbortScope } from './abort.js';
import type { CallContext, Policy } from './types.js';

/**
 * One attempt: its abort scope (the tool's `signal`), its timer and the settling of its promise.
 * Whatever happens first — the tool answers, the timer fires, the run aborts — settles it; the
 * rest is ignored.
 */
class Attempt extends AbortScope {
  timer: ReturnType<typeof setTimeout> | undefined;
  settled = false;
  constructor(
    readonly ctx: CallContext,
    readonly ms: number,
    private readonly resolve: (value: unknown) => void,
    private readonly reject: (reason: unknown) => void,
  ) {
    super();
  }

  /**
   * The tool answered: in time, or late (the attempt timed out
   * or was aborted), then only the idempotency policy hears it.
   */
  answered(value: unknown): void {
    if (this.settle()) {
      this.ctx.reached = false;
      this.resolve(value);
    } else this.ctx.lateAnswer?.(value);
  }

  /** The tool failed in time: nothing of this attempt is with the tool any more (a later cut-off leaves no doubt). */
  failed(error: unknown): void {
    if (this.settle()) {
      this.ctx.reached = false;
      this.reject(error);
    }
  }

  /** Timed out, or the run aborted (the run aborts its attempts): the call fails with `reason`. */
  override abort(reason: unknown): void {
    super.abort(reason);
    if (this.settle()) this.reject(reason);
  }

  /** Marks the attempt settled and releases its timer and run link; false if it already was. */
  private settle(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    this.ctx.run.unlink(this);
    return true;
  }
}

function onTimer(attempt: Attempt): void {
  const { ctx } = attempt;
  if (attempt.ms < ctx.timeoutMs) {
    // The clamp fired, not the tool's own timeout: the deadline has come for the whole run.
    ctx.run.abort(deadline(ctx.chain)); // aborts this attempt (and concurrent steps) along
    return;
  }
  attempt.abort(
    new ToolFailure({
      category: 'timeout',
      code: 'attempt_timeout',
      message: `Tool ${ctx.tool.name} did not answer within ${ctx.timeoutMs} ms (attempt ${ctx.attempt}).`,
    }),
  );
}

/**
 * Bounds each attempt by `ctx.timeoutMs`, clamped to the time left before the deadline, so the
 * deadline needs no timer of its own. When the clamp was what fired, the whole run is aborted with
 * `deadline_exceeded`. A run abort (deadline, cancel, close) settles the attempt at once, whether
 * or not the tool honours its signal.
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
    return new Promise((resolve, reject) => {
      const attempt = new Attempt(ctx, Math.min(ctx.timeoutMs, left), resolve, reject);
      ctx.attemptScope = attempt;
      run.link(attempt);
      attempt.timer = setTimeout(onTimer, attempt.ms, attempt);
      let pending: Promise<unknown>;
      try {
        pending = next(ctx);
      } catch (error) {
        pending = Promise.reject(error);
      }
      // Bound, not arrow functions: a bound function keeps no closure context (less kept per call in flight).
      pending.then(attempt.answered.bind(attempt), attempt.failed.bind(attempt));
    });
  };
}

function deadline(chain: string | undefined): RunAbortReason {
  return new RunAbortReason(
    'deadline',
    chain ? `Chain ${chain} passed its deadline.` : 'The call passed its deadline.',
  );
}
