// What a step kind's runner is (run/step-kinds.ts registers the runners, one per kind).
import type { PlannedStep } from '../../define/step-kinds.js';
import type { StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';

/**
 * Runs one step of its kind once `when` allowed it: an outcome at once, or a promise. A tool step's
 * promise resolves with the tool's output (no wrapping hop: every step in flight would keep one);
 * any other with its outcome. A module-level function: the dispatch allocates nothing per step.
 *
 * @example
 * ```ts
 * const runCompute: StepRunner = (host, step) => ({ kind: 'ok', value: 1, skipped: false });
 * ```
 */
export type StepRunner = (host: StepHost, step: PlannedStep, inFlight: InFlight) => StepOutcome | Promise<unknown>;

/**
 * The message of a run that passed its deadline while awaiting `what`.
 *
 * @example
 * ```ts
 * host.bounded(promise, deadlineIn(host, `compute step ${step.id}`));
 * ```
 */
export const deadlineIn = (host: StepHost, what: string): string =>
  `Chain ${host.exec.chain.name} passed its deadline in ${what}.`;
