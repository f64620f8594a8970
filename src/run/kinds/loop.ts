// The loop step's runner (its spec type and planner: define/kinds/loop.ts): the chain runs nested
// once per iteration (`step/1`, `step/2`, …) until `until` holds, at most `max` times, `delayMs`
// apart; each iteration journaled in a durable run.
import type { Chain } from '../../define/chain.js';
import type { PlannedStep } from '../../define/step-kinds.js';
import { RunAbortReason } from '../../errors/failure.js';
import { sleep } from '../../policies/abort.js';
import type { TraceStep } from '../../observe/trace.js';
import { describeThrown, isThenable, StepError, type StepOutcome } from '../execution.js';
import type { InFlight, StepHost } from '../step-host.js';
import { priorUnitUndo } from '../prior-undo.js';
import { gated, journalUnit, nestedInput, priorUnits, runNested, unitEntry } from '../sub-run.js';
import { deadlineIn } from './runner.js';

/**
 * Runs a loop step (the `loop` entry of the runner table); `until` still false after `max`
 * iterations fails with `loop_limit`.
 *
 * @example
 * ```ts
 * const outcome = await runLoop(host, step, inFlight);
 * ```
 */
export function runLoop(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<StepOutcome> {
  return gated(host, step, () => loop(host, step, inFlight));
}

async function loop(host: StepHost, step: PlannedStep, inFlight: InFlight): Promise<StepOutcome> {
  const { until, max, delayMs } = step.loop!;
  const call = step.calls![0]!;
  const key = host.stepKey(step);
  const prior = priorUnits(host.exec, key);
  const children: TraceStep[] = [];
  inFlight.children = children;
  for (let n = 1; n <= max; n++) {
    const id = `${key}/${n}`;
    let value: unknown;
    const kept = prior?.get(n);
    if (kept) {
      value = kept.value;
      if (kept.trace) children.push(kept.trace);
      const undo = priorUnitUndo(host.exec, step, key, n, host.scope);
      if (undo.length > 0) (inFlight.undo ??= []).push(...undo);
    } else {
      if (n > 1 && delayMs > 0)
        await host.bounded(
          sleep(delayMs, host.abort),
          deadlineIn(host, `the wait between iterations of loop ${step.id}`),
        );
      const started = host.calls.now();
      const end = await runNested(
        host,
        id,
        call.chain as Chain,
        nestedInput(step, call.resolveInput, host.scope),
        host.abort,
      );
      const entry = unitEntry(n, id, end, started, host.calls.now());
      children.push(entry);
      // Iterations that completed (or stopped at a gate or wait inside) are undone if the run fails later, this loop
      // included.
      if (end.undo !== undefined && end.undo.length > 0) (inFlight.undo ??= []).push(...end.undo);
      if (end.outcome.kind !== 'ok') return end.outcome;
      value = end.outcome.value;
      if (host.exec.journal !== undefined || host.exec.kept !== undefined) {
        const answer = await journalUnit(host.exec, { step: id, value, trace: entry });
        if (answer === false)
          throw new StepError({
            category: 'conflict',
            code: 'journal_refused',
            message: `Step ${id} was not journaled: the run store refused it (another runner may own the run now).`,
          });
      }
    }
    let done: unknown;
    try {
      done = until(value, n);
      if (isThenable(done)) done = await host.bounded(done, deadlineIn(host, `\`until\` of loop ${step.id}`));
    } catch (error) {
      if (error instanceof RunAbortReason) throw error;
      throw new StepError({
        category: 'internal',
        code: 'until_failed',
        message: `Step ${step.id}: \`until\` threw: ${describeThrown(error)}`,
      });
    }
    if (done) return { kind: 'ok', value, skipped: false };
  }
  throw new StepError(
    {
      category: 'timeout',
      code: 'loop_limit',
      message: `Step ${step.id}: \`until\` did not hold after ${max} iteration(s) (its \`max\`).`,
    },
    { userMessage: 'This is taking longer than expected; try again later.' },
  );
}
