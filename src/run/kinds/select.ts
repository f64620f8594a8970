// The select step's runner (its spec type and planner: define/kinds/select.ts).
import type { SelectStep } from '../../define/spec.js';
import type { Scope } from '../../define/ref.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { StepError, type StepOutcome } from '../execution.js';
import type { StepHost } from '../step-host.js';

/**
 * Runs a select step (the `select` entry of the runner table).
 *
 * @example
 * ```ts
 * const outcome = runSelect(host, step);
 * ```
 */
export function runSelect(host: StepHost, step: PlannedStep): StepOutcome {
  return selectItems(step, step.step as SelectStep, host.scope);
}

/**
 * A select step: the items of `from` that match, as `expect` says; no match and several-for-one are failures.
 *
 * @example
 * ```ts
 * const outcome = selectItems(step, step.step as SelectStep, scope);
 * ```
 */
function selectItems(step: PlannedStep, def: SelectStep, scope: Scope): StepOutcome {
  const { from, expect, noMatch } = def.select;
  const items = from.resolve(scope);
  if (!Array.isArray(items))
    throw new StepError({
      category: 'validation',
      code: 'not_an_array',
      message: `Step ${step.id}: ${from} is not an array.`,
    });
  const matches = items.filter(step.matcher!(scope));
  if (matches.length === 0) {
    throw new StepError(
      {
        category: 'not_found',
        code: 'no_match',
        message: `Step ${step.id}: none of the ${items.length} item(s) in ${from} matched.`,
      },
      typeof noMatch === 'string' ? { userMessage: noMatch } : {},
    );
  }
  if (expect === 'one' && matches.length > 1) {
    throw new StepError(
      {
        category: 'ambiguous',
        code: 'ambiguous',
        message: `Step ${step.id}: ${matches.length} items in ${from} matched; expected one.`,
      },
      { candidates: matches, userMessage: `${matches.length} items match. Which one did you mean?` },
    );
  }
  return { kind: 'ok', value: expect === 'all' ? matches : matches[0], skipped: false };
}
