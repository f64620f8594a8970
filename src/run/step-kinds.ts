// The step kinds at run time: the `when` that may skip any step, then the step's runner, one per
// kind (run/kinds/<kind>.ts), registered in this table. A kind's spec type and planner are in
// define/kinds/<kind>.ts, registered in define/step-kinds.ts: define/ (layer 3) may not import run/
// (layer 8), so a kind is one file per layer, each listed in its layer's table.
import type { PlannedStep, StepKind } from '../define/step-kinds.js';
import { RunAbortReason } from '../errors/failure.js';
import { describeThrown, isThenable, SKIPPED, StepError, type StepOutcome } from './execution.js';
import type { InFlight, StepHost } from './step-host.js';
import { runCompute } from './kinds/compute.js';
import { deadlineIn, type StepRunner } from './kinds/runner.js';
import { runSelect } from './kinds/select.js';
import { runTool } from './kinds/tool.js';
import { runSubChain } from './kinds/sub-chain.js';
import { runForEach } from './kinds/for-each.js';
import { runBranch } from './kinds/branch.js';
import { runLoop } from './kinds/loop.js';
import { runSleep } from './kinds/sleep.js';
import { runWaitFor } from './kinds/wait-for.js';
import { gated } from './sub-run.js';

// One runner per kind, every kind required by the type. A lookup and a call to a module-level
// function: the per-step dispatch allocates nothing.
const RUNNERS: { readonly [K in StepKind]: StepRunner } = {
  tool: runTool,
  select: runSelect,
  compute: runCompute,
  chain: runSubChain,
  forEach: runForEach,
  branch: runBranch,
  loop: runLoop,
  sleep: runSleep,
  waitFor: runWaitFor,
};

/**
 * What a step does: an outcome at once, or a promise. A tool step's promise resolves with the
 * tool's output (no wrapping hop: every step in flight would keep one); any other with its outcome.
 *
 * @example
 * ```ts
 * const body = stepBody(host, step, inFlight);
 * ```
 */
export function stepBody(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  const when = step.step.when;
  if (when) {
    const whenFailed = (error: unknown): never => {
      if (error instanceof RunAbortReason) throw error;
      throw new StepError({
        category: 'internal',
        code: 'when_failed',
        message: `Step ${step.id}: \`when\` threw: ${describeThrown(error)}`,
      });
    };
    let go: unknown;
    try {
      go = when(host.scope);
    } catch (error) {
      whenFailed(error);
    }
    // An async `when` is awaited (a pending Promise is not `false`), within the run's deadline.
    if (isThenable(go)) {
      return host
        .bounded(go, deadlineIn(host, `\`when\` of step ${step.id}`))
        .then((v) => (v === false ? SKIPPED : kindBody(host, step, inFlight)), whenFailed);
    }
    if (go === false) return SKIPPED;
  }
  return kindBody(host, step, inFlight);
}

/** Kinds that ask their own `confirm`: a tool step once its input is built, a step running chains before any starts. */
const ASKS_ITSELF: ReadonlySet<StepKind> = new Set<StepKind>(['tool', 'chain', 'forEach', 'branch', 'loop']);

function kindBody(host: StepHost, step: PlannedStep, inFlight: InFlight): StepOutcome | Promise<unknown> {
  const run = RUNNERS[step.kind];
  if (step.step.confirm && !ASKS_ITSELF.has(step.kind))
    // A select, compute, sleep or waitFor step asks before it runs (these runners resolve with outcomes).
    return gated(host, step, () => run(host, step, inFlight) as StepOutcome | Promise<StepOutcome>);
  return run(host, step, inFlight);
}
