// The select step: its spec type and its planner (`from` must be an array, `where` is checked against
// its items). Its runner is run/kinds/select.ts.
import { isPlainObject } from '../mapping.js';
import { arrayElement, arrayOf, schemaKind } from '../path.js';
import { likelyArray } from '../path-hints.js';
import { isRef, ref, type Ref, type Scope } from '../ref.js';
import type { FieldMatcher, StepCommon } from '../step-common.js';
import { compileWhere } from '../where.js';
import type { KindPlan, OutputSchema, PlanContext, StepPlanner } from './plan.js';

/** Picks items out of an earlier output. */
export interface SelectStep<S = Scope> extends StepCommon<S> {
  select: {
    from: Ref;
    /** Field matchers, or a predicate over each item. */
    where?: Record<string, FieldMatcher> | ((item: any, scope: S) => boolean);
    /** `'one'` fails with `ambiguous` when several match; `'first'` takes the first; `'all'` keeps every match. */
    expect: 'one' | 'first' | 'all';
    /** What the end user is told when nothing matches (the `not_found` failure's `userMessage`). */
    noMatch?: string;
  };
}

/** A select step's fields of the plan. */
export interface SelectPlan {
  /** Select steps: builds the item predicate for this run. */
  readonly matcher?: (scope: Scope) => (item: unknown) => boolean;
}

/**
 * Checks a select step: `from` a ref to an array, `where` against its items, `expect`.
 *
 * @example
 * ```ts
 * const { output, fields } = selectPlanner.plan(step, 'steps[1]', 1, ctx, refs);
 * ```
 */
export const selectPlanner: StepPlanner<SelectStep, SelectPlan> = {
  plan(step: Partial<SelectStep>, at: string, i: number, ctx: PlanContext, refs: Ref[]): KindPlan<SelectPlan> {
    const { issues, checkRef } = ctx;
    const sel = (typeof step.select === 'object' && step.select !== null ? step.select : {}) as Partial<
      SelectStep['select']
    >;
    let usesScope = false;
    let element: OutputSchema = null;
    let whereItems: OutputSchema = null;
    if (sel !== step.select) issues.add(`${at}.select`, 'Expected `select` to be { from, where?, expect }.');
    else if (!isRef(sel.from)) {
      issues.add(`${at}.select.from`, "Expected `from` to be a ref(...) to an array, e.g. ref('find', 'tasks').");
    } else {
      refs.push(sel.from);
      const src = checkRef(sel.from, `${at}.select.from`, i);
      if (src) {
        element = arrayElement(src);
        if (!element && schemaKind(src) !== 'unknown')
          issues.add(`${at}.select.from`, `ref ${sel.from} is a ${schemaKind(src)}, not an array.`);
      }
      // A `from` reported above still lets `where` be checked, against the array it most likely meant.
      if (src === undefined || (src && !element && schemaKind(src) !== 'unknown')) {
        const root = checkRef(ref(sel.from.source), `${at}.select.from`, i);
        const meant = root ? likelyArray(root, isPlainObject(sel.where) ? Object.keys(sel.where) : []) : undefined;
        if (meant) {
          whereItems = meant.element;
          issues.add(
            `${at}.select.from`,
            `did you mean ref('${sel.from.source}'${meant.path ? `, '${meant.path}'` : ''})? ` +
              '`where` is checked against its items.',
          );
        }
      }
    }
    if (!['one', 'first', 'all'].includes(sel.expect as string))
      issues.add(`${at}.select.expect`, "Expected `expect` to be 'one', 'first' or 'all'.");
    if (sel.noMatch !== undefined && typeof sel.noMatch !== 'string')
      issues.add(
        `${at}.select.noMatch`,
        'Expected `noMatch` to be the sentence shown to the user when nothing matches.',
      );
    let matcher: SelectPlan['matcher'];
    if (typeof sel.where === 'function') {
      usesScope = true;
      const where = sel.where;
      matcher = (s) => (item) => where(item, s);
    } else if (sel.where === undefined) {
      matcher = () => () => true;
    } else if (isPlainObject(sel.where)) {
      matcher = compileWhere(
        sel.where as Record<string, FieldMatcher>,
        `${at}.select.where`,
        element ?? whereItems,
        issues,
        refs,
        (r, p) => checkRef(r, p, i),
      );
    } else {
      issues.add(
        `${at}.select.where`,
        'Expected `where` to be a field matcher object or a function (item, scope) => boolean.',
      );
    }
    return {
      output: element && sel.expect === 'all' ? arrayOf(element) : element,
      usesScope,
      fields: { matcher: matcher ?? (() => () => false) },
    };
  },
};
