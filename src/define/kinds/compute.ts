// The compute step: its spec type and its planner. Its runner is run/kinds/compute.ts.
import type { Ref, Scope } from '../ref.js';
import { isSchema, type Schema } from '../schema.js';
import type { StepCommon } from '../step-common.js';
import type { KindPlan, PlanContext, StepPlanner } from './plan.js';

/** A pure local computation. */
export interface ComputeStep<S = Scope> extends StepCommon<S> {
  /** Computes the step's value from the scope (pure, local). */
  compute: (scope: S) => unknown;
  output?: Schema;
}

/**
 * Checks a compute step: a function, and an `output` schema if given (the step's output for later refs).
 *
 * @example
 * ```ts
 * const { output } = computePlanner.plan(step, 'steps[1]', 1, ctx, refs);
 * ```
 */
export const computePlanner: StepPlanner<ComputeStep, undefined> = {
  plan(step: Partial<ComputeStep>, at: string, _i: number, { issues }: PlanContext, _refs: Ref[]): KindPlan<undefined> {
    if (typeof step.compute !== 'function')
      issues.add(`${at}.compute`, 'Expected `compute` to be a function of the scope.');
    if (step.output !== undefined && !isSchema(step.output))
      issues.add(`${at}.output`, 'Expected `output` to be a zod schema or another Standard Schema.');
    return { output: isSchema(step.output) ? step.output : null, usesScope: true, fields: undefined };
  },
};
