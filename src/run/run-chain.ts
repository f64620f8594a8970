// One-shot runs: a runner made and closed around a single chain run.
import type { Chain } from '../define/chain.js';
import { createRunner } from './runner.js';
import { type Runner } from './runner-api.js';
import type { RunnerOptions } from './runner-options.js';
import type { ToolInvoker } from '../invokers/types.js';
import type { RunOptions } from './types.js';
import type { RunResult } from '../observe/result.js';
import { asksInside } from './keeps-nested.js';

/** Options of {@link runChain}: an `invoker` (a runner is made and closed for you) or a `runner`. */
export type RunChainOptions<C> = RunOptions<C> &
  (({ invoker: ToolInvoker; runner?: never } & Omit<RunnerOptions, 'invoker'>) | { runner: Runner; invoker?: never });

/**
 * Runs a chain once. With `invoker`, a runner is created and closed around the run; with `runner`,
 * that runner is used. A chain with a confirmation gate needs a way to answer it: `confirm`
 * (in-process), a long-lived `runner`, or `secret` plus a shared `stores.checkpoints` (so another
 * runner can resume the token) — otherwise `runChain` rejects with a `TypeError` before running.
 * A gate inside a sub-chain (a `chain`, `forEach`, `branch` or `loop` step's chain, at any depth)
 * counts the same.
 *
 * @example
 * ```ts
 * const r = await runChain(findAndComplete, { match: 'milk' }, { invoker, context: { userId } });
 * ```
 */
export function runChain<I, C, O, In, CIn>(
  chain: Chain<I, C, O, In, CIn>,
  input: NoInfer<In>,
  options: RunChainOptions<NoInfer<CIn>> & (undefined extends CIn ? unknown : { context: NoInfer<CIn> }),
): Promise<RunResult<O>>;
export async function runChain<I, C, O>(
  chain: Chain<I, any, O>,
  input: I,
  options: RunChainOptions<C>,
): Promise<RunResult<O>> {
  const {
    context,
    sessionId,
    runId,
    signal,
    confirm,
    runner: given,
    ...rest
  } = options as RunOptions<C> & { runner?: Runner } & Partial<RunnerOptions>;
  const runOptions: RunOptions<C> = {
    ...(context !== undefined && { context }),
    ...(sessionId !== undefined && { sessionId }),
    ...(runId !== undefined && { runId }),
    ...(signal && { signal }),
    ...(confirm && { confirm }),
  };
  if (given) return given.run(chain, input, runOptions);
  const runnerOptions = rest as RunnerOptions;
  // The one-shot runner is closed after the run: a token it issued could only be resumed by a runner
  // sharing its secret and checkpoint store.
  if (
    !confirm &&
    !(runnerOptions.secret && runnerOptions.stores?.checkpoints) &&
    (chain.plan.some((step) => step.step.confirm) || asksInside(chain as Chain))
  ) {
    throw new TypeError(
      `runChain: chain ${chain.name} has a confirmation gate, and the runner made for this call is closed after it, ` +
        'so its resume token could not be used. ' +
        'Pass `confirm` to answer the gate in-process, pass a long-lived `runner`, ' +
        'or pass `secret` and a shared `stores.checkpoints` so another runner can resume it.',
    );
  }
  const runner = createRunner(runnerOptions);
  try {
    return await runner.run(chain, input, runOptions);
  } finally {
    await runner.close();
  }
}
