// The waitFor step (`{ id, waitFor: { signal, schema, timeoutMs? } }`): the run parks until
// `runner.signal(runId, signal, payload)` brings a payload its schema accepts. Its spec type and its
// planner; its runner is run/kinds/wait-for.ts.
import { isPlainObject } from '../mapping.js';
import type { Ref, Scope } from '../ref.js';
import { isSchema, type Schema } from '../schema.js';
import type { StepCommon } from '../step-common.js';
import { MAX_SLEEP_MS } from './sleep.js';
import type { KindPlan, PlanContext, StepPlanner } from './plan.js';

/** Waits for the signal `signal`; its result is the payload, validated by `schema`. */
export interface WaitForStep<S = Scope> extends StepCommon<S> {
  waitFor: {
    /** The signal's name (`runner.signal(runId, name, payload)`). */
    signal: string;
    /** Validates the payload (a signal it refuses is rejected, the run keeps waiting); the step's result type. */
    schema: Schema;
    /** Past this (ms from when the run parked), the run fails `timeout`/`wait_timeout`. Default: no limit. */
    timeoutMs?: number;
  };
}

/** A waitFor step's fields of the plan. */
export interface WaitForPlan {
  readonly waitFor?: { readonly signal: string; readonly schema: Schema; readonly timeoutMs: number | undefined };
}

/**
 * Checks a waitFor step: `signal` a name, `schema` a validator, `timeoutMs` a duration.
 *
 * @example
 * ```ts
 * const { fields } = waitForPlanner.plan(step, 'steps[5]', 5, ctx, refs);
 * ```
 */
export const waitForPlanner: StepPlanner<WaitForStep, WaitForPlan> = {
  plan(step: Partial<WaitForStep>, at: string, _i: number, ctx: PlanContext, _refs: Ref[]): KindPlan<WaitForPlan> {
    const { issues } = ctx;
    const spec = step.waitFor;
    if (!isPlainObject(spec)) {
      issues.add(`${at}.waitFor`, 'Expected `waitFor` to be { signal, schema, timeoutMs? }.');
      return { output: null, usesScope: false, fields: undefined };
    }
    const w = spec as Partial<WaitForStep['waitFor']>;
    let ok = true;
    if (typeof w.signal !== 'string' || !/^[\w.:-]{1,128}$/.test(w.signal)) {
      issues.add(
        `${at}.waitFor.signal`,
        'Expected `signal` to be a name of 1 to 128 letters, digits, `_`, `-`, `.` or `:`.',
      );
      ok = false;
    }
    if (!isSchema(w.schema)) {
      issues.add(
        `${at}.waitFor.schema`,
        'Expected `schema` to be a schema (zod or Standard Schema) validating the payload.',
      );
      ok = false;
    }
    if (
      w.timeoutMs !== undefined &&
      !(Number.isFinite(w.timeoutMs) && w.timeoutMs >= 1 && w.timeoutMs <= MAX_SLEEP_MS)
    ) {
      issues.add(
        `${at}.waitFor.timeoutMs`,
        `Expected \`timeoutMs\` to be a duration in ms from 1 to ${MAX_SLEEP_MS}, got ${String(w.timeoutMs)}.`,
      );
      ok = false;
    }
    if (!ok) return { output: null, usesScope: false, fields: undefined };
    return {
      output: w.schema!,
      usesScope: false,
      fields: { waitFor: { signal: w.signal!, schema: w.schema!, timeoutMs: w.timeoutMs } },
    };
  },
};
