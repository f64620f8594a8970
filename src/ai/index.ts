/**
 * chainkit/ai: a chain as a Vercel AI SDK tool, with confirmation gates as tool approvals.
 *
 * @module chainkit/ai
 */
import { tool, type ModelMessage, type Tool } from 'ai';
import type { Chain } from '../define/chain.js';
import { chainToolCore, type AgentContextOption } from '../run/agent-tool.js';
import type { ModelResult } from '../run/relay.js';
import type { Runner } from '../run/runner.js';

export type { AgentContextOption } from '../run/agent-tool.js';
export type { ModelResult } from '../run/relay.js';

/** Options of {@link asAiSdkTool}. */
export interface AiSdkToolOptions {
  /**
   * The trusted context of each run (e.g. `{ userId }`), or a function of the AI SDK's
   * `experimental_context` (what you pass to `generateText`) returning it. Never from the model.
   */
  context?: AgentContextOption<unknown>;
}

/**
 * A chain as an AI SDK tool: the model fills the chain's input (its zod schema), `execute` runs
 * the chain and returns a {@link ModelResult}. A chain with a confirmation gate uses the SDK's
 * tool approval: `needsApproval` runs the chain up to the gate (and no further), and the run goes
 * past the gate only when this tool call was approved (`tool-approval-response`); the run id is
 * the tool call id. To show the gate's question in your approval UI, listen to the runner's
 * `confirmation:requested` event (its `runId` is the `toolCallId`); it fires when `needsApproval`
 * reaches the gate and again when the approved call passes it, so key your UI by `runId`.
 *
 * @example
 * ```ts
 * const result = await generateText({
 *   model, prompt: 'Delete my dentist task',
 *   tools: { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId } }) },
 * });
 * // result.content has a tool-approval-request: ask the user, then call generateText again with
 * // [...messages, ...result.response.messages, { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved: true }] }]
 * ```
 */
export function asAiSdkTool<I, C, O>(runner: Runner, chain: Chain<I, C, O, any, any>, options: AiSdkToolOptions = {}): Tool<I, ModelResult> {
  const core = chainToolCore<unknown>(runner, chain, options.context, 'asAiSdkTool');
  return tool<I, ModelResult>({
    description: chain.description,
    inputSchema: chain.input,
    ...(core.gated && {
      // The SDK asks again before executing an approved call: the approval in the messages answers
      // that, without running the chain up to its gate once more.
      needsApproval: async (input: I, { toolCallId, messages, experimental_context }: { toolCallId: string; messages: ModelMessage[]; experimental_context?: unknown }) =>
        approvedIn(messages, toolCallId) || core.needsApproval(input, toolCallId, experimental_context),
    }),
    execute: (input, { toolCallId, messages, abortSignal, experimental_context }) =>
      core.execute(input, toolCallId, experimental_context, () => approvedIn(messages, toolCallId), abortSignal),
  } as Parameters<typeof tool<I, ModelResult>>[0]);
}

/** Whether the conversation holds an approval of this tool call (the SDK executes approved calls only, but a gate newly reached must not pass unasked). */
function approvedIn(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const approvals = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const part of m.content) if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) approvals.add(part.approvalId);
  }
  return messages.some((m) => m.role === 'tool' && m.content.some((part) => part.type === 'tool-approval-response' && part.approved && approvals.has(part.approvalId)));
}
