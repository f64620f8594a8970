// The branch step's runner (its spec type and planner: define/kinds/branch.ts): `on` names a case,
// whose chain runs nested; no such case and no `default` is `invalid_input`/`no_branch`.
import type { Chain } from '../../define/chain.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { describeThrown, StepError, type StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';
import { gated, nestedInput, runNested } from '../sub-run.js';

/**
 * Runs a branch step (the `branch` entry of the runner table).
 *
 * @example
 * ```ts
 * const outcome = await runBranch(host, step, inFlight);
 * ```
 */
export function runBranch(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<StepOutcome> {
  const { on, names, hasDefault } = step.branch!;
  let value: unknown;
  try {
    value = on(host.scope);
  } catch (error) {
    throw new StepError({
      category: 'internal',
      code: 'branch_failed',
      message: `Step ${step.id}: \`on\` threw: ${describeThrown(error)}`,
    });
  }
  // Case names are object keys, so text; a number (a ref to a numeric field) names the case written as it.
  const name = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  let index = typeof name === 'string' ? names.indexOf(name) : -1;
  if (index < 0) {
    if (!hasDefault) {
      const shown = typeof value === 'string' ? `'${value}'` : String(value);
      throw new StepError(
        {
          category: 'invalid_input',
          code: 'no_branch',
          message: `Step ${step.id}: ${shown} names no case (cases: ${names.join(', ')}) and there is no \`default\`.`,
        },
        { userMessage: `'${String(value)}' is not one of: ${names.join(', ')}.` },
      );
    }
    index = names.length;
  }
  const call = step.calls![index]!;
  const input = nestedInput(step, call.resolveInput, host.scope);
  return gated(host, step, () =>
    runNested(host, host.stepKey(step), call.chain as Chain, input, host.abort).then((end) => {
      inFlight.children = end.trace;
      inFlight.undo = end.undo;
      return end.outcome;
    }),
  );
}
