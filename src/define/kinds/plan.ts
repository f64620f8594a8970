// What a step kind's planner is given and returns (define/step-kinds.ts registers the planners).
import type { IssueList } from '../../errors/definition-error.js';
import type { Resolver } from '../mapping.js';
import type { Ref } from '../ref.js';
import type { Schema } from '../schema.js';

/** A step's output schema as far as the checks know it: `null` when unknown, `undefined` when a ref path is missing. */
export type OutputSchema = Schema | null | undefined;

/** What the plan compiler lends a planner for one chain: the issue list and its ref and mapping checks. */
export interface PlanContext {
  readonly issues: IssueList;
  /** Checks a ref made in step `stepIndex` (or in its own `compensate`, with `allowSelf`) and returns the schema it points at. */
  checkRef(r: Ref, at: string, stepIndex: number, allowSelf?: boolean): OutputSchema;
  /**
   * Checks a tool-input mapping against the tool's input schema (adding the refs it reads to `refs`)
   * and compiles it into a resolver.
   */
  mappingResolver(mapping: Record<string, unknown>, target: Schema, at: string, stepIndex: number, allowSelf: boolean, toolName: string, refs: Ref[]): Resolver;
}

/** What a planner found for one step. */
export interface KindPlan<Fields> {
  /** The step's output schema, for refs of later steps. */
  readonly output: OutputSchema;
  /** True when a function of the scope runs for the step, so it waits for every earlier step. */
  readonly usesScope: boolean;
  /** The kind's own fields of the planned step (see `PlannedStep`). */
  readonly fields: Fields | undefined;
}

/**
 * One step kind at definition time: the static checks of its spec and its fields of the plan.
 * Options every kind shares (`when`, `confirm`, `retry`, `compensate`, …) are checked by the plan compiler.
 *
 * @example
 * ```ts
 * const computePlanner: StepPlanner<ComputeStep, undefined> = {
 *   plan: (step, at) => ({ output: null, usesScope: true, fields: undefined }),
 * };
 * ```
 */
export interface StepPlanner<Spec, Fields> {
  /**
   * Checks step `index` (at path `at`, e.g. `steps[2]`), as written by the user (any field may be
   * missing or wrong), adding every problem to `ctx.issues`; the refs the step reads go into `refs`
   * (they become its dependencies).
   */
  plan(step: Partial<Spec>, at: string, index: number, ctx: PlanContext, refs: Ref[]): KindPlan<Fields>;
}
