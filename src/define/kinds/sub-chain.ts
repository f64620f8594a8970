// The sub-chain step (`{ id, chain, input }`): another chain run as one step, its result the
// sub-chain's output. Its spec type and its planner; its runner is run/kinds/sub-chain.ts.
import type { Ref, Scope } from '../ref.js';
import type { InputMapping, StepCommon } from '../step-common.js';
import {
  planCall,
  type ChainLike,
  type KindPlan,
  type PlanContext,
  type StepPlanner,
  type SubChainCall,
} from './plan.js';

/** Runs another chain as one step; its steps nest under this one in traces and events (`audit/find`). */
export interface SubChainStep<S = Scope> extends StepCommon<S> {
  chain: ChainLike;
  /** The sub-chain's input: literals and refs checked against its input schema, or a function of the scope. */
  input: InputMapping | ((scope: S) => unknown);
}

/** The plan fields of the steps that run chains: the sub-chains and how their inputs are built. */
export interface FlowCallsPlan {
  /**
   * `chain` and `loop` steps: their one sub-chain; `forEach`:
   * the chain run per item; `branch`: its cases, then `default`.
   */
  readonly calls?: readonly SubChainCall[];
}

/**
 * Checks a sub-chain step: a chain (not one that contains this chain) and an input mapping that
 * fits the sub-chain's input schema (or a function).
 *
 * @example
 * ```ts
 * const { fields } = subChainPlanner.plan(step, 'steps[3]', 3, ctx, refs);
 * ```
 */
export const subChainPlanner: StepPlanner<SubChainStep, FlowCallsPlan> = {
  plan(step: Partial<SubChainStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<FlowCallsPlan> {
    const { call, usesScope } = planCall(step.chain, step.input, at, i, ctx, refs);
    return { output: null, usesScope, fields: call ? { calls: [call] } : undefined };
  },
};
