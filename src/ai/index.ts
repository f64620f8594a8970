/**
 * chainkit/ai: a chain as a Vercel AI SDK tool (v6 and v7), with confirmation gates as tool
 * approvals.
 *
 * @module chainkit/ai
 */
// Types only: the SDK's `tool()` is the identity, so the object below works with whichever major
// the app installed, and nothing here is bound to one major's runtime.
import type { FlexibleSchema, ModelMessage } from 'ai';
import type { Chain } from '../define/chain.js';
import { chainToolCore, type AgentContextOption } from '../run/agent-tool.js';
import type { ModelResult } from '../run/model-result.js';
import type { Runner } from '../run/runner-api.js';

export type { AgentContextOption } from '../run/agent-tool.js';
export type { ModelResult } from '../run/model-result.js';

/** Options of {@link asAiSdkTool}. */
export interface AiSdkToolOptions<TContext = unknown> {
  /**
   * The trusted context of each run (e.g. `{ userId }`), or a function of the AI SDK's tool
   * context returning it: on v7 the tool's entry in `toolsContext` (what you pass to
   * `generateText({ toolsContext: { [toolName]: … } })`), on v6 `experimental_context`. Never
   * from the model.
   */
  context?: AgentContextOption<TContext>;
  /**
   * The schema of the AI SDK's tool context (AI SDK v7's `contextSchema`): v7 validates the
   * tool's `toolsContext` entry against it and types `toolsContext` from it, and the `context`
   * function's parameter is typed from it. v6 has no tool context schema and ignores it (the
   * chain still validates the context the function returns).
   */
  contextSchema?: FlexibleSchema<TContext>;
}

/**
 * What the AI SDK passes to `execute` and `needsApproval`, as both majors share it: v7 gives the
 * tool's `context` (from `toolsContext`), v6 gives `experimental_context` (one value for all tools).
 */
export interface AiSdkToolCallOptions<TContext = unknown> {
  toolCallId: string;
  messages: ModelMessage[];
  abortSignal?: AbortSignal;
  /** AI SDK v7: this tool's entry in `generateText({ toolsContext })`. */
  context?: TContext;
  /** AI SDK v6: `generateText({ experimental_context })`. */
  experimental_context?: unknown;
}

/**
 * A chain as an AI SDK tool: assignable to the `Tool` of AI SDK v6 and v7 (a structural type, so
 * one declaration file serves both). `I` is the chain's input, `TContext` the tool context its
 * `context` function reads.
 */
export interface AiSdkChainTool<I, TContext = unknown> {
  description: string;
  inputSchema: FlexibleSchema<I>;
  /** v7 types `toolsContext` from it (v7 infers a tool's context type from this property only). */
  contextSchema?: FlexibleSchema<TContext>;
  /** Present when the chain has a confirmation gate. */
  needsApproval?: (input: I, options: AiSdkToolCallOptions<TContext>) => Promise<boolean>;
  /** Runs (or resumes, once approved) the chain and answers the model with its result. */
  execute: (input: I, options: AiSdkToolCallOptions<TContext>) => Promise<ModelResult>;
}

/**
 * A chain as an AI SDK tool (v6 or v7): the model fills the chain's input (its schema), `execute`
 * runs the chain and returns a {@link ModelResult}. A chain with a confirmation gate uses the
 * SDK's tool approval: `needsApproval` runs the chain up to the gate, where the run parks, and the
 * run goes past the gate only when this tool call was approved (`tool-approval-response`): with a
 * run store it is decided where it parked, without one it runs again. The run id is the tool call
 * id. To show the gate's question in your approval UI, listen to the runner's
 * `confirmation:requested` event (its `runId` is the `toolCallId`); it fires when `needsApproval`
 * reaches the gate (and, without a run store, again when the approved call passes it), so key your
 * UI by `runId`.
 *
 * @example
 * ```ts
 * const result = await generateText({
 *   model, prompt: 'Delete my dentist task',
 *   tools: { find_and_delete: asAiSdkTool(runner, findAndDelete, { context: { userId } }) },
 * });
 * // result.content has a tool-approval-request: ask the user, then call generateText again with
 * // [...messages, ...result.response.messages,
 * //   { role: 'tool', content: [{ type: 'tool-approval-response', approvalId, approved: true }] }]
 *
 * // The context per request: AI SDK v7 passes the tool's `toolsContext` entry (typed from the
 * // function's parameter); v6 passes `experimental_context` instead.
 * const tools = {
 *   task_summary: asAiSdkTool(runner, taskSummary, { context: (c: { userId: string }) => ({ userId: c.userId }) }),
 * };
 * await generateText({ model, prompt: 'How am I doing?', tools, toolsContext: { task_summary: { userId } } });
 * ```
 */
export function asAiSdkTool<I, C, O, TContext = unknown>(
  runner: Runner,
  chain: Chain<I, C, O, any, any>,
  options: AiSdkToolOptions<TContext> = {},
): AiSdkChainTool<I, TContext> {
  // The SDK asks needsApproval only of a call whose input its schema (chain.input) parsed, with that value.
  const core = chainToolCore<TContext>(runner, chain, options.context, 'asAiSdkTool', true);
  const tool: AiSdkChainTool<I, TContext> = {
    description: chain.description,
    inputSchema: chain.input,
    ...(options.contextSchema !== undefined && { contextSchema: options.contextSchema }),
    execute: (input, o) =>
      core.execute(input, o.toolCallId, toolContext(o), () => approvedIn(o.messages, o.toolCallId), o.abortSignal),
  };
  // The SDK asks again before executing an approved call (v6 always, v7 when it revalidates the
  // approval): the approval in the messages answers that, without running the chain up to its gate once more.
  if (core.gated)
    tool.needsApproval = async (input, o) =>
      approvedIn(o.messages, o.toolCallId) || core.needsApproval(input, o.toolCallId, toolContext(o));
  return tool;
}

/**
 * The SDK's tool context: v7's `context`, else v6's `experimental_context`
 * (typed by the caller's `context` function, as the SDK types neither).
 */
function toolContext<TContext>(o: AiSdkToolCallOptions<TContext>): TContext {
  return (o.context !== undefined ? o.context : o.experimental_context) as TContext;
}

/**
 * Whether the conversation holds an approval of this tool call (the SDK executes
 * approved calls only, but a gate newly reached must not pass unasked).
 */
function approvedIn(messages: readonly ModelMessage[], toolCallId: string): boolean {
  const approvals = new Set<string>();
  for (const m of messages) {
    if (m.role !== 'assistant' || typeof m.content === 'string') continue;
    for (const part of m.content)
      if (part.type === 'tool-approval-request' && part.toolCallId === toolCallId) approvals.add(part.approvalId);
  }
  return messages.some(
    (m) =>
      m.role === 'tool' &&
      m.content.some(
        (part) => part.type === 'tool-approval-response' && part.approved && approvals.has(part.approvalId),
      ),
  );
}
