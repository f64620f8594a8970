// The waitFor step's runner (its spec type and planner: define/kinds/wait-for.ts): the durable run
// parks `waiting` for the step's signal; `runner.signal` journals the payload as the step's result
// and continues the run (run/durable.ts). A run that cannot park fails the step.
import type { PlannedStep } from '../../define/step-kinds.js';
import { StepError, type StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';
import { canPark } from './sleep.js';

/**
 * Runs a waitFor step (the `waitFor` entry of the runner table): the run parks until the signal.
 *
 * @example
 * ```ts
 * const outcome = runWaitFor(host, step, inFlight); // { kind: 'wait', signal: 'review', until }
 * ```
 */
export function runWaitFor(host: StepHost, step: PlannedStep, _inFlight: InFlight): StepOutcome {
  const { signal, timeoutMs } = step.waitFor!;
  if (!canPark(host))
    throw new StepError({
      category: 'internal',
      code: 'wait_unsupported',
      message:
        `Step ${host.stepKey(step)} waits for signal '${signal}', ` +
        'which a run cannot do without a run store (give the runner stores.runs).',
    });
  return { kind: 'wait', signal, ...(timeoutMs !== undefined && { until: host.calls.now() + timeoutMs }) };
}
