/**
 * chainkit/openai-agents: a chain as an OpenAI Agents SDK function tool, with confirmation gates
 * as the SDK's tool approvals (run interruptions).
 *
 * @module chainkit/openai-agents
 */
import { randomUUID } from 'node:crypto';
import { tool, type FunctionTool, type RunContext } from '@openai/agents';
import type { z } from 'zod';
import type { Chain } from '../define/chain.js';
import { chainToolCore, type AgentContextOption } from '../run/agent-tool.js';
import type { ModelResult } from '../run/model-result.js';
import type { Runner } from '../run/runner-api.js';

export type { AgentContextOption } from '../run/agent-tool.js';
export type { ModelResult } from '../run/model-result.js';

/** Options of {@link asOpenAIAgentsTool}. */
export interface OpenAIAgentsToolOptions<TContext> {
  /**
   * The trusted context of each run (e.g. `{ userId }`), or a function of the Agents SDK's run
   * context (what you pass as `run(agent, input, { context })`) returning it. Never from the model.
   */
  context?: AgentContextOption<TContext>;
}

/**
 * A chain as an OpenAI Agents SDK function tool named after the chain, with the chain's zod input
 * as its parameters; it returns a {@link ModelResult}. A chain with a confirmation gate sets
 * `needsApproval`: the chain runs up to the gate, where it parks, the run is interrupted with a
 * tool approval item, and after `state.approve(item)` the chain goes past the gate (with a run
 * store, from where it parked; without one, run again). The chain's run id is the tool call id;
 * the gate's question is the runner's `confirmation:requested` event (fired when the gate is
 * reached, and without a run store again when the approved call passes it).
 *
 * @example
 * ```ts
 * const agent = new Agent({
 *   name: 'Tasks',
 *   tools: [asOpenAIAgentsTool(runner, findAndDelete, { context: (c) => ({ userId: c.userId }) })],
 * });
 * let result = await run(agent, 'Delete my dentist task', { context: { userId } });
 * for (const item of result.interruptions) result.state.approve(item); // after asking the user
 * result = await run(agent, result.state);
 * ```
 */
export function asOpenAIAgentsTool<I, C, O, TContext = unknown>(
  runner: Runner,
  chain: Chain<I, C, O, any, any>,
  options: OpenAIAgentsToolOptions<TContext> = {},
): FunctionTool<TContext> {
  // The SDK hands needsApproval the model's arguments as JSON.parse gave them, checked by nothing.
  const core = chainToolCore<TContext>(runner, chain, options.context, 'asOpenAIAgentsTool', false);
  const callIdOf = (id: string | undefined): string => id ?? `call_${randomUUID()}`;
  return tool({
    name: chain.name,
    description: chain.description,
    parameters: chain.input as unknown as z.ZodObject,
    strict: true,
    ...(core.gated && {
      needsApproval: (runContext: RunContext, input: unknown, callId?: string) =>
        core.needsApproval(input, callIdOf(callId), runContext.context as TContext),
    }),
    execute: async (
      input: unknown,
      runContext?: RunContext<TContext>,
      details?: { toolCall?: { callId?: string }; signal?: AbortSignal },
    ): Promise<ModelResult> => {
      const callId = callIdOf(details?.toolCall?.callId);
      const approved = (): boolean => runContext?.isToolApproved({ toolName: chain.name, callId }) === true;
      return core.execute(input, callId, runContext?.context as TContext, approved, details?.signal);
    },
  }) as unknown as FunctionTool<TContext>;
}
