// The loop step (`{ id, loop: { chain, input, until, max, delayMs? } }`): a chain run again until
// `until` says so, at most `max` times. Its spec type and its planner; its runner is run/kinds/loop.ts.
import { isPlainObject } from '../mapping.js';
import type { Ref, Scope } from '../ref.js';
import type { InputMapping, StepCommon } from '../step-common.js';
import { checkMs } from '../tool.js';
import type { FlowCallsPlan } from './sub-chain.js';
import { planCall, type ChainLike, type KindPlan, type PlanContext, type StepPlanner } from './plan.js';

/** Runs `chain` until `until(output)` is true, at most `max` times; its result is the last output. */
export interface LoopStep<S = Scope> extends StepCommon<S> {
  loop: {
    chain: ChainLike;
    /** The sub-chain's input (the same each iteration): literals and refs, or a function of the scope. */
    input: InputMapping | ((scope: S) => unknown);
    /** True ends the loop; given the iteration's output and its number (from 1). */
    until: (output: any, iteration: number) => boolean | Promise<boolean>;
    /** Required: the most iterations; `until` still false after them fails with `loop_limit`. */
    max: number;
    /** Wait between iterations, ms (default 0). */
    delayMs?: number;
  };
}

/** A loop step's fields of the plan. */
export interface LoopPlan extends FlowCallsPlan {
  readonly loop?: {
    readonly until: (output: unknown, iteration: number) => boolean | Promise<boolean>;
    readonly max: number;
    readonly delayMs: number;
  };
}

/** Iterations a loop may allow at most: beyond this, `max` is surely a mistake. */
const MAX_LOOP = 100_000;

/**
 * Checks a loop step: the chain and its input, `until` a function, `max` required (a positive
 * integer), `delayMs` a duration.
 *
 * @example
 * ```ts
 * const { fields } = loopPlanner.plan(step, 'steps[4]', 4, ctx, refs);
 * ```
 */
export const loopPlanner: StepPlanner<LoopStep, LoopPlan> = {
  plan(step: Partial<LoopStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<LoopPlan> {
    const { issues } = ctx;
    const spec = step.loop;
    if (!isPlainObject(spec)) {
      issues.add(`${at}.loop`, 'Expected `loop` to be { chain, input, until, max, delayMs? }.');
      return { output: null, usesScope: false, fields: undefined };
    }
    const lp = spec as Partial<LoopStep['loop']>;
    if (typeof lp.until !== 'function')
      issues.add(`${at}.loop.until`, 'Expected `until` to be a function (output, iteration) => boolean.');
    const maxOk = Number.isSafeInteger(lp.max) && lp.max! >= 1 && lp.max! <= MAX_LOOP;
    if (lp.max === undefined)
      issues.add(
        `${at}.loop.max`,
        'A loop needs `max`, the most iterations (e.g. max: 20): an unbounded loop could run until the deadline.',
      );
    else if (!maxOk)
      issues.add(`${at}.loop.max`, `Expected \`max\` to be an integer from 1 to ${MAX_LOOP}, got ${String(lp.max)}.`);
    if (lp.delayMs !== undefined) checkMs(lp.delayMs, `${at}.loop.delayMs`, 'delayMs', issues, true);
    const { call, usesScope } = planCall(lp.chain, lp.input, `${at}.loop`, i, ctx, refs);
    if (!call || typeof lp.until !== 'function' || !maxOk) return { output: null, usesScope, fields: undefined };
    return {
      output: null,
      usesScope,
      fields: { calls: [call], loop: { until: lp.until, max: lp.max!, delayMs: lp.delayMs ?? 0 } },
    };
  },
};
