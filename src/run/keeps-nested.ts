// Which chains keep what their sub-chains finished for a checkpoint (Execution.kept): decided once
// per chain from its plan, at any depth.
import type { Chain } from '../define/chain.js';
import type { StepCommon } from '../define/step-common.js';

const asks = new WeakMap<Chain, boolean>();
/**
 * Whether a step of one of `chain`'s sub-chains (at any depth) has a confirmation gate.
 *
 * @example
 * ```ts
 * if (asksInside(chain)) console.log('a gate inside a sub-chain can park this run');
 * ```
 */
export function asksInside(chain: Chain): boolean {
  let found = asks.get(chain);
  if (found === undefined) {
    found = false;
    // Chains that contain themselves are refused when defined: this recursion ends.
    for (const step of chain.plan)
      for (const call of step.calls ?? []) {
        const sub = call.chain as Chain;
        if (sub.plan.some((s) => (s.step as StepCommon).confirm) || asksInside(sub)) found = true;
      }
    asks.set(chain, found);
  }
  return found;
}

/**
 * Whether a run of `chain` keeps what its sub-chains finished ({@link Execution.kept}) for a
 * checkpoint: it runs sub-chains and can stop at a gate (its own, or one inside them). The resumed
 * run then neither runs them again nor forgets to undo them if it fails.
 *
 * @example
 * ```ts
 * const exec = { ...base, ...(keepsNested(chain) && { kept: [] }) };
 * ```
 */
export function keepsNested(chain: Chain): boolean {
  let keeps = keeping.get(chain);
  if (keeps === undefined) {
    keeps =
      chain.plan.some((s) => s.calls !== undefined) &&
      (chain.plan.some((s) => (s.step as StepCommon).confirm) || asksInside(chain));
    keeping.set(chain, keeps);
  }
  return keeps;
}
const keeping = new WeakMap<Chain, boolean>();
