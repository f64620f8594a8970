// The forEach step (`{ id, forEach: { over, chain, input, concurrency?, onItemError? } }`): a chain
// run per element of an array, at most `concurrency` at once. Its spec type and its planner; its
// runner is run/kinds/for-each.ts.
import { isPlainObject, type Resolver } from '../mapping.js';
import { arrayElement, schemaKind } from '../path.js';
import { isRef, type Ref, type Scope } from '../ref.js';
import type { InputMapping, StepCommon } from '../step-common.js';
import type { FlowCallsPlan } from './sub-chain.js';
import {
  planCall,
  type ChainLike,
  type KindPlan,
  type OutputSchema,
  type PlanContext,
  type StepPlanner,
} from './plan.js';

/** Runs `chain` once per element of `over`; its result is the array of the outputs, in order. */
export interface ForEachStep<S = Scope> extends StepCommon<S> {
  forEach: {
    /** A ref to an array. */
    over: Ref;
    chain: ChainLike;
    /**
     * The sub-chain's input per item: literals and refs (`ref('item', path)`
     * reads the element), or a function `(item, scope) => input`.
     */
    input: InputMapping | ((item: any, scope: S) => unknown);
    /** How many items run at once (default 1). */
    concurrency?: number;
    /**
     * `'fail'` (default): the first failed item fails the step; `'collect'`:
     * every item runs and yields `{ ok, value } | { ok: false, error }`.
     */
    onItemError?: 'fail' | 'collect';
  };
}

/** A forEach step's fields of the plan. */
export interface ForEachPlan extends FlowCallsPlan {
  readonly forEach?: { readonly over: Ref; readonly concurrency: number; readonly collect: boolean };
}

/**
 * Checks a forEach step: `over` a ref to an array, the chain, its input mapping (with `ref('item', …)`
 * checked against the element type), `concurrency` and `onItemError`.
 *
 * @example
 * ```ts
 * const { fields } = forEachPlanner.plan(step, 'steps[1]', 1, ctx, refs);
 * ```
 */
export const forEachPlanner: StepPlanner<ForEachStep, ForEachPlan> = {
  plan(step: Partial<ForEachStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<ForEachPlan> {
    const { issues, checkRef } = ctx;
    const none = { output: null, usesScope: false, fields: undefined };
    const spec = step.forEach;
    if (!isPlainObject(spec)) {
      issues.add(`${at}.forEach`, 'Expected `forEach` to be { over, chain, input, concurrency?, onItemError? }.');
      return none;
    }
    const fe = spec as Partial<ForEachStep['forEach']>;
    let element: OutputSchema = null;
    if (!isRef(fe.over))
      issues.add(`${at}.forEach.over`, "Expected `over` to be a ref(...) to an array, e.g. ref('find', 'tasks').");
    else {
      refs.push(fe.over);
      const src = checkRef(fe.over, `${at}.forEach.over`, i);
      if (src) {
        element = arrayElement(src) ?? null;
        if (!element && schemaKind(src) !== 'unknown')
          issues.add(`${at}.forEach.over`, `ref ${fe.over} is a ${schemaKind(src)}, not an array.`);
      }
    }
    const concurrency = fe.concurrency ?? 1;
    if (!Number.isSafeInteger(concurrency) || concurrency < 1)
      issues.add(
        `${at}.forEach.concurrency`,
        `Expected \`concurrency\` to be a positive integer, got ${String(fe.concurrency)}.`,
      );
    if (fe.onItemError !== undefined && fe.onItemError !== 'fail' && fe.onItemError !== 'collect')
      issues.add(`${at}.forEach.onItemError`, "Expected `onItemError` to be 'fail' or 'collect'.");
    // A function input is `(item, scope)`: made a resolver of the item scope here.
    const input =
      typeof fe.input === 'function' ? itemFunction(fe.input as (item: unknown, scope: Scope) => unknown) : fe.input;
    const { call, usesScope } = ctx.withItem(element ?? null, () =>
      planCall(fe.chain, input, `${at}.forEach`, i, ctx, refs),
    );
    if (!call || !isRef(fe.over)) return { ...none, usesScope };
    return {
      output: null,
      usesScope,
      fields: {
        calls: [call],
        forEach: {
          over: fe.over,
          concurrency: Number.isSafeInteger(concurrency) && concurrency >= 1 ? concurrency : 1,
          collect: fe.onItemError === 'collect',
        },
      },
    };
  },
};

const itemFunction =
  (fn: (item: unknown, scope: Scope) => unknown): Resolver =>
  (scope) =>
    fn((scope as ItemScope).item, scope);

/** The scope a forEach input is built from: the run's, and the current element. */
export interface ItemScope extends Scope {
  readonly item: unknown;
}
