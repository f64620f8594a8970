// What the agent-framework adapters share: a chain as one tool call, with its gates answered by
// the framework's approval step.
import { isChain, type Chain } from '../define/chain.js';
import { INPUT_PARSED, type ParsedInputOptions } from './prepare.js';
import type { Runner } from './runner-api.js';
import { toModelResult, type ModelResult } from './model-result.js';
import type { DecideResult, RunOptions } from './types.js';

/** The trusted context of a chain run from an agent: fixed, or read from the framework's own context. */
export type AgentContextOption<F> =
  Record<string, unknown> | ((frameworkContext: F) => Record<string, unknown> | Promise<Record<string, unknown>>);

/** @internal A chain as a framework tool: `needsApproval` and `execute`, keyed by the tool call id. */
export interface ChainToolCore<F> {
  /** Whether the chain has any confirmation gate (else no approval is ever needed). */
  readonly gated: boolean;
  /**
   * Runs the chain up to its first gate, where it parks: true when the call needs the user's
   * approval. Nothing past the gate runs.
   */
  needsApproval(input: unknown, callId: string, frameworkContext: F): Promise<boolean>;
  /** Runs the chain; a gate is passed only if `approved()` says the framework approved this call. */
  execute(
    input: unknown,
    callId: string,
    frameworkContext: F,
    approved: () => boolean,
    signal?: AbortSignal,
  ): Promise<ModelResult>;
}

/** @internal */
export function chainToolCore<F>(
  runner: Runner,
  chain: Chain,
  context: AgentContextOption<F> | undefined,
  who: string,
  /** Whether the framework hands `needsApproval` the input it parsed with `chain.input` (else the run parses it). */
  approvalInputParsed: boolean,
): ChainToolCore<F> {
  if (typeof runner?.run !== 'function') throw new TypeError(`${who}: expected a runner made by createRunner().`);
  if (!isChain(chain)) throw new TypeError(`${who}: expected a chain made by defineChain().`);
  if (context !== undefined && typeof context !== 'function' && (typeof context !== 'object' || context === null)) {
    throw new TypeError(`${who}: expected \`context\` to be an object or a function of the framework's context.`);
  }
  // The run id is the tool call id. With a run store, the run parked at its gate is decided by that id
  // from any instance (`execute` may come in another request); without one, `execute` runs the chain
  // again, and write steps before the gate are deduplicated by their idempotency keys.
  const runCall = async (
    input: unknown,
    callId: string,
    f: F,
    confirm: RunOptions['confirm'],
    parsed: boolean,
    signal?: AbortSignal,
  ) => {
    const ctx = await trustedContext(context, f, who);
    const options: ParsedInputOptions<Record<string, unknown>> = {
      ...(parsed && { [INPUT_PARSED]: true as const }), // the framework parsed it with chain.input
      runId: callId,
      ...(ctx !== undefined && { context: ctx }),
      ...(signal && { signal }),
      ...(confirm && { confirm }),
    };
    return runner.run(chain, input, options);
  };
  // The parked run of this call, decided (and each later gate with it), or undefined: none is parked
  // (no run store, or the call did not stop at a gate when approval was asked).
  const decideParked = async (callId: string, approved: boolean) => {
    let decided: DecideResult;
    try {
      decided = await runner.decide(callId, { approved, by: who });
    } catch (error) {
      if ((error as { code?: unknown } | undefined)?.code === 'no_run_store') return undefined;
      throw error;
    }
    while (typeof decided !== 'string' && decided.status === 'awaiting_confirmation' && approved) {
      decided = await runner.decide(callId, { approved, by: who }); // a later gate: the approval covers the call
    }
    return typeof decided === 'string' ? undefined : decided;
  };
  return {
    gated: chain.plan.some(
      (step) => step.kind === 'tool' && (step.step as { confirm?: unknown }).confirm !== undefined,
    ),
    async needsApproval(input, callId, f) {
      return (await runCall(input, callId, f, undefined, approvalInputParsed)).status === 'awaiting_confirmation';
    },
    async execute(input, callId, f, approved, signal) {
      const parked = await decideParked(callId, approved());
      if (parked) return toModelResult(parked);
      let unasked = false;
      // Both SDKs parse a call's input with chain.input before `execute`, and hand it what that gave.
      const confirm = (): boolean => approved() || ((unasked = true), false);
      const out = toModelResult(await runCall(input, callId, f, confirm, true, signal));
      // A gate this call had not reached when approval was decided (the data changed since): not
      // passed, and the model is told to ask again rather than that the user said no.
      if (unasked && out.status === 'declined') {
        return {
          ...out,
          message:
            `Step ${out.step} needs the user's approval, which was not asked for this call; ` +
            'call the tool again to ask.',
        };
      }
      return out;
    },
  };
}

/**
 * @internal The trusted context of a call, from the app's function. What that function throws may
 * hold the app's secrets (a connection string, a token), and it would reach the model or client as
 * the tool's error: it becomes a plain error whose `cause` is the original, for the app's own logs.
 */
export async function trustedContext<F>(
  context: AgentContextOption<F> | undefined,
  f: F,
  who: string,
): Promise<Record<string, unknown> | undefined> {
  if (typeof context !== 'function') return context;
  try {
    return await context(f);
  } catch (error) {
    throw new Error(`${who}: the context function failed, so nothing was run.`, { cause: error });
  }
}
