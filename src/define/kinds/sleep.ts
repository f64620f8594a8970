// The sleep step (`{ id, sleep: ms | ref }`): waits, then the run goes on. Its spec type and its
// planner; its runner is run/kinds/sleep.ts (a durable run parks for a sleep of 1 s or more).
import type { Resolver } from '../mapping.js';
import { isRef, type Ref, type Scope } from '../ref.js';
import type { StepCommon } from '../step-common.js';
import type { KindPlan, PlanContext, StepPlanner } from './plan.js';

/** Waits `sleep` ms (a number, a ref to one, or a function of the scope); its result is `null`. */
export interface SleepStep<S = Scope> extends StepCommon<S> {
  /**
   * How long, in ms from 0 to a year: a number, a ref to one (`ref('input', 'delayMs')`), or a function of the scope.
   */
  sleep: number | Ref | ((scope: S) => number);
}

/** A sleep step's fields of the plan. */
export interface SleepPlan {
  readonly sleep?: { readonly ms: Resolver };
}

/** The longest sleep: a year (longer is surely a unit mistake). */
export const MAX_SLEEP_MS = 366 * 86_400_000;

/**
 * Checks a sleep step: `sleep` a duration in ms (0 to a year), a ref, or a function of the scope.
 *
 * @example
 * ```ts
 * const { fields } = sleepPlanner.plan(step, 'steps[3]', 3, ctx, refs);
 * ```
 */
export const sleepPlanner: StepPlanner<SleepStep, SleepPlan> = {
  plan(step: Partial<SleepStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<SleepPlan> {
    const spec = step.sleep;
    if (typeof spec === 'number') {
      if (!(Number.isFinite(spec) && spec >= 0 && spec <= MAX_SLEEP_MS)) {
        ctx.issues.add(
          `${at}.sleep`,
          `Expected \`sleep\` to be a duration in ms from 0 to ${MAX_SLEEP_MS}, got ${String(spec)}.`,
        );
        return { output: null, usesScope: false, fields: undefined };
      }
      return { output: null, usesScope: false, fields: { sleep: { ms: () => spec } } };
    }
    if (isRef(spec)) {
      refs.push(spec);
      ctx.checkRef(spec, `${at}.sleep`, i);
      return { output: null, usesScope: false, fields: { sleep: { ms: (s) => spec.resolve(s) } } };
    }
    if (typeof spec === 'function')
      return { output: null, usesScope: true, fields: { sleep: { ms: spec as Resolver } } };
    ctx.issues.add(
      `${at}.sleep`,
      'Expected `sleep` to be a duration in ms, a ref(...) to one, or a function of the scope returning one.',
    );
    return { output: null, usesScope: false, fields: undefined };
  },
};
