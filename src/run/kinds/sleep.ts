// The sleep step's runner (its spec type and planner: define/kinds/sleep.ts): a sleep under 1 s, or
// in a run without a run store, waits in place within the run's deadline; a durable run (its
// sub-chains included) parks `waiting` for a longer one, woken by the recovery of any runner (run/durable.ts).
import type { PlannedStep } from '../../define/step-kinds.js';
import { MAX_SLEEP_MS } from '../../define/kinds/sleep.js';
import { sleep } from '../../policies/abort.js';
import { StepError, type StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';
import { deadlineIn } from './runner.js';

/** Sleeps shorter than this run in place: parking and waking cost store writes and a poll. */
const PARK_MIN_MS = 1_000;

/** The result of a sleep step. */
const SLEPT: StepOutcome = Object.freeze({ kind: 'ok', value: null, skipped: false });

/**
 * Whether the run can park: durable, on a store that parks (a sub-chain's run parks the whole run).
 *
 * @example
 * ```ts
 * if (canPark(host)) return { kind: 'wait', until };
 * ```
 */
export const canPark = (host: StepHost): boolean => host.exec.parks === true;

/**
 * Runs a sleep step (the `sleep` entry of the runner table).
 *
 * @example
 * ```ts
 * const outcome = await runSleep(host, step, inFlight);
 * ```
 */
export function runSleep(host: StepHost, step: PlannedStep, _inFlight: InFlight): StepOutcome | Promise<StepOutcome> {
  const ms = step.sleep!.ms(host.scope);
  if (typeof ms !== 'number' || !(Number.isFinite(ms) && ms >= 0 && ms <= MAX_SLEEP_MS)) {
    throw new StepError({
      category: 'invalid_input',
      code: 'invalid_sleep',
      message: `Step ${step.id}: expected a sleep in ms from 0 to ${MAX_SLEEP_MS}, got ${String(ms)}.`,
    });
  }
  if (ms >= PARK_MIN_MS && canPark(host)) return { kind: 'wait', until: host.calls.now() + ms };
  if (ms === 0) return SLEPT;
  return host.bounded(sleep(ms, host.abort), deadlineIn(host, `sleep step ${step.id}`)).then(() => SLEPT);
}
