// The branch step (`{ id, branch: { on, cases, default? } }`): one of several chains, picked by a
// value. Its spec type and its planner; its runner is run/kinds/branch.ts.
import { isPlainObject, type Resolver } from '../mapping.js';
import { isRef, type Ref, type Scope } from '../ref.js';
import type { InputMapping, StepCommon } from '../step-common.js';
import type { FlowCallsPlan } from './sub-chain.js';
import {
  isChainLike,
  planCall,
  type ChainLike,
  type KindPlan,
  type PlanContext,
  type StepPlanner,
  type SubChainCall,
} from './plan.js';

/** A branch case: a chain (given the parent chain's input), or a chain and its input mapping. */
export type BranchCase<S = Scope> =
  | ChainLike
  | {
      chain: ChainLike;
      /** The case chain's input: literals and refs, or a function of the scope. */
      input: InputMapping | ((scope: S) => unknown);
    };

/** Runs the chain of the case named by `on`; its result is that chain's output. */
export interface BranchStep<S = Scope> extends StepCommon<S> {
  branch: {
    /** A ref to the case name, or a function of the scope returning it. */
    on: Ref | ((scope: S) => string | number);
    cases: Record<string, BranchCase<S>>;
    /** Runs when `on` names no case; without it that fails with `invalid_input`/`no_branch`. */
    default?: BranchCase<S>;
  };
}

/** A branch step's fields of the plan: `calls` holds the cases in `names` order, then the default. */
export interface BranchPlan extends FlowCallsPlan {
  readonly branch?: { readonly on: Resolver; readonly names: readonly string[]; readonly hasDefault: boolean };
}

/**
 * Checks a branch step: `on` a ref or a function, each case (and `default`) a chain or `{ chain, input }`.
 *
 * @example
 * ```ts
 * const { fields } = branchPlanner.plan(step, 'steps[2]', 2, ctx, refs);
 * ```
 */
export const branchPlanner: StepPlanner<BranchStep, BranchPlan> = {
  plan(step: Partial<BranchStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<BranchPlan> {
    const { issues } = ctx;
    const spec = step.branch;
    if (!isPlainObject(spec)) {
      issues.add(`${at}.branch`, 'Expected `branch` to be { on, cases, default? }.');
      return { output: null, usesScope: false, fields: undefined };
    }
    const br = spec as Partial<BranchStep['branch']>;
    let usesScope = false;
    let on: Resolver | undefined;
    if (isRef(br.on)) {
      refs.push(br.on);
      ctx.checkRef(br.on, `${at}.branch.on`, i);
      const r = br.on;
      on = (s) => r.resolve(s);
    } else if (typeof br.on === 'function') {
      usesScope = true;
      on = br.on as Resolver;
    } else
      issues.add(
        `${at}.branch.on`,
        'Expected `on` to be a ref(...) to the case name, or a function of the scope returning it.',
      );
    const calls: SubChainCall[] = [];
    const names: string[] = [];
    const one = (c: unknown, where: string): void => {
      const { call, usesScope: fn } = isChainLike(c)
        ? planCall(c, undefined, where, i, ctx, refs, true)
        : isPlainObject(c)
          ? planCall(c.chain, c.input, where, i, ctx, refs)
          : planCall(undefined, undefined, where, i, ctx, refs);
      usesScope ||= fn;
      if (call) calls.push(call);
    };
    if (!isPlainObject(br.cases) || Object.keys(br.cases).length === 0)
      issues.add(
        `${at}.branch.cases`,
        'Expected `cases` to be an object of at least one case name → chain (or { chain, input }).',
      );
    else
      for (const name of Object.keys(br.cases)) {
        names.push(name);
        one(br.cases[name], `${at}.branch.cases.${name}`);
      }
    if (br.default !== undefined) one(br.default, `${at}.branch.default`);
    const complete = on !== undefined && calls.length === names.length + (br.default !== undefined ? 1 : 0);
    return {
      output: null,
      usesScope,
      fields: complete ? { calls, branch: { on: on!, names, hasDefault: br.default !== undefined } } : undefined,
    };
  },
};
