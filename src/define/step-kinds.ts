// The step kinds at definition time: one planner per kind (define/kinds/<kind>.ts, spec type and
// checks), registered in this table; the plan compiler (validate.ts) is a loop over it.
// A kind's runner is in run/kinds/<kind>.ts, registered in run/step-kinds.ts: define/ (layer 3)
// may not import run/ (layer 8), so a kind is one file per layer, each listed in its layer's table.
import type { Resolver } from './mapping.js';
import type { Scope } from './ref.js';
import type { Tool } from './tool.js';
import { computePlanner, type ComputeStep } from './kinds/compute.js';
import { selectPlanner, type SelectPlan, type SelectStep } from './kinds/select.js';
import { toolPlanner, type ToolPlan, type ToolStep } from './kinds/tool.js';
import { subChainPlanner, type SubChainStep } from './kinds/sub-chain.js';
import { forEachPlanner, type ForEachPlan, type ForEachStep } from './kinds/for-each.js';
import { branchPlanner, type BranchPlan, type BranchStep } from './kinds/branch.js';
import { loopPlanner, type LoopPlan, type LoopStep } from './kinds/loop.js';
import { sleepPlanner, type SleepPlan, type SleepStep } from './kinds/sleep.js';
import { waitForPlanner, type WaitForPlan, type WaitForStep } from './kinds/wait-for.js';

/**
 * The planner of each step kind, keyed by the spec field that
 * names the kind; the order is the one messages list them in.
 */
export const STEP_PLANNERS = {
  tool: toolPlanner,
  select: selectPlanner,
  compute: computePlanner,
  chain: subChainPlanner,
  forEach: forEachPlanner,
  branch: branchPlanner,
  loop: loopPlanner,
  sleep: sleepPlanner,
  waitFor: waitForPlanner,
} as const;

/** The name of a step kind (`tool`, `select`, `compute`, `chain`, `forEach`, `branch`, `loop`, `sleep`, `waitFor`). */
export type StepKind = keyof typeof STEP_PLANNERS;

/** One step of a chain. */
export type Step<S = Scope> =
  | ToolStep<S>
  | SelectStep<S>
  | ComputeStep<S>
  | SubChainStep<S>
  | ForEachStep<S>
  | BranchStep<S>
  | LoopStep<S>
  | SleepStep<S>
  | WaitForStep<S>;

/** One step of a compiled chain, with everything the executor needs precomputed. */
export interface PlannedStep extends ToolPlan, SelectPlan, ForEachPlan, BranchPlan, LoopPlan, SleepPlan, WaitForPlan {
  readonly index: number;
  readonly id: string;
  readonly kind: StepKind;
  readonly step: Step;
  /**
   * Indices of the steps that must finish first (ascending). Steps these wait for are implied, so a
   * step that sees every earlier step lists only the earlier steps nothing else waits for yet.
   */
  readonly deps: readonly number[];
  /** Steps with `compensate`: the undo tool and its input builder. */
  readonly compensate?: { readonly tool: Tool; readonly resolveInput: Resolver };
}
