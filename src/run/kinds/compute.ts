// The compute step's runner (its spec type and planner: define/kinds/compute.ts).
import type { ComputeStep } from '../../define/spec.js';
import { parseSchema } from '../../define/schema.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { RunAbortReason } from '../../errors/failure.js';
import { schemaFailure } from '../pipeline.js';
import { describeThrown, isThenable, StepError, type StepOutcome } from '../execution.js';
import type { StepHost } from '../step-host.js';
import { deadlineIn } from './runner.js';

/**
 * Runs a compute step (the `compute` entry of the runner table): its value, awaited within the
 * deadline if it is a promise, checked against its `output` schema.
 *
 * @example
 * ```ts
 * const outcome = runCompute(host, step);
 * ```
 */
export function runCompute(host: StepHost, step: PlannedStep): StepOutcome | Promise<StepOutcome> {
  const def = step.step as ComputeStep;
  const threw = (error: unknown): never => {
    if (error instanceof RunAbortReason) throw error;
    throw new StepError({
      category: 'internal',
      code: 'compute_failed',
      message: `Step ${step.id}: compute threw: ${describeThrown(error)}`,
    });
  };
  let value: unknown;
  try {
    value = def.compute(host.scope);
  } catch (error) {
    threw(error);
  }
  if (isThenable(value))
    return host
      .bounded(value, deadlineIn(host, `compute step ${step.id}`))
      .then((v) => computedValue(step, def, v), threw);
  return computedValue(step, def, value);
}

/** A compute step's value, checked against its `output` schema when it has one. */
function computedValue(step: PlannedStep, def: ComputeStep, value: unknown): StepOutcome {
  if (def.output) {
    const parsed = parseSchema(def.output, value);
    if (!parsed.success)
      throw new StepError(
        schemaFailure(
          'invalid_output',
          `Step ${step.id} computed a value that does not match its output schema`,
          parsed.error.issues,
        ),
      );
    value = parsed.data;
  }
  return { kind: 'ok', value, skipped: false };
}
