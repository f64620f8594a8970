// The sub-chain step's runner (its spec type and planner: define/kinds/sub-chain.ts): the chain runs
// as a nested execution, its steps named `step/…` in events, the trace and the journal.
import type { Chain } from '../../define/chain.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import type { StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';
import { gated, nestedInput, runNested } from '../sub-run.js';

/**
 * Runs a sub-chain step (the `chain` entry of the runner table): its input built, the chain run
 * nested, its steps' trace entries kept under this step's.
 *
 * @example
 * ```ts
 * const outcome = await runSubChain(host, step, inFlight);
 * ```
 */
export function runSubChain(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<StepOutcome> {
  const call = step.calls![0]!;
  const input = nestedInput(step, call.resolveInput, host.scope);
  return gated(host, step, () =>
    runNested(host, host.stepKey(step), call.chain as Chain, input, host.abort).then((end) => {
      inFlight.children = end.trace;
      inFlight.undo = end.undo;
      return end.outcome;
    }),
  );
}
