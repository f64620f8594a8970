// A step in flight, between the executor starting it and recording how it ended.
import type { PlannedStep } from '../define/step-kinds.js';
import type { TraceStep } from '../observe/trace.js';
import type { CallContext } from '../policies/types.js';
import type { UndoUnit } from './compensate.js';
import { ok, type StepOutcome } from './execution.js';
import type { InFlight } from './step-host.js';

/** What a step in flight reports its end to: the run it belongs to (run/executor.ts). */
export interface StepEnds {
  endStep(run: StepRun, outcome: StepOutcome): void;
  failed(step: PlannedStep, error: unknown, ctx: CallContext | undefined): StepOutcome;
}

/**
 * A step in flight: what it learns on the way (its call context and, with full traces, its input)
 * and how it ends. Its handlers are bound to it rather than closures: a bound function keeps no
 * context, and every step in flight holds a pair.
 *
 * @example
 * ```ts
 * const run = new StepRun(this, step, now());
 * body.then(run.resolved.bind(run), run.rejected.bind(run));
 * ```
 */
export class StepRun implements InFlight {
  ctx: CallContext | undefined = undefined;
  input: unknown = undefined;
  children: TraceStep[] | undefined = undefined;
  undo: UndoUnit[] | undefined = undefined;
  constructor(
    readonly run: StepEnds,
    readonly step: PlannedStep,
    readonly started: number,
  ) {}

  /** A step that called its tool resolves with the tool's output, any other step with its outcome. */
  resolved(result: unknown): void {
    this.run.endStep(this, this.ctx ? ok(result) : (result as StepOutcome));
  }

  rejected(error: unknown): void {
    this.run.endStep(this, this.run.failed(this.step, error, this.ctx));
  }
}
