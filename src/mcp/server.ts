// Chains as MCP tools: one tool per chain, plus confirm_action to answer confirmation gates.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { isChain, type Chain } from '../define/chain.js';
import { schemaToJSONSchema, type Schema } from '../define/schema.js';
import { ERROR_CATEGORIES } from '../errors/categories.js';
import { DefinitionError } from '../errors/definition-error.js';
import { modelSummary, toModelResult, type ModelResult } from '../run/model-result.js';
import type { Runner } from '../run/runner-api.js';
import { trustedContext } from '../run/agent-tool.js';
import { INPUT_PARSED, type ParsedInputOptions } from '../run/prepare.js';
import type { RunResult } from '../observe/result.js';

/** What an MCP request handler is given: `signal`, `sessionId`, `authInfo`, `requestInfo`, … */
export type McpRequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Options of {@link serveChains}. */
export interface ServeChainsOptions {
  name: string;
  version: string;
  /**
   * The trusted context of every run (e.g. `{ userId }`), or a function of the request's `extra`
   * (auth info, session id) returning it. Never taken from the model's arguments.
   */
  context?:
    Record<string, unknown> | ((extra: McpRequestExtra) => Record<string, unknown> | Promise<Record<string, unknown>>);
  /** Shown to the client as the server's instructions. */
  instructions?: string;
}

/**
 * The name of the tool that answers confirmation gates.
 *
 * @example
 * ```ts
 * await client.callTool({ name: CONFIRM_TOOL, arguments: { resumeToken, approved: true } });
 * ```
 */
export const CONFIRM_TOOL = 'confirm_action';

const HOW_TO_CONFIRM =
  `Ask the user this question. Then call ${CONFIRM_TOOL} with this resumeToken and approved: true if they said yes, ` +
  "approved: false if not. Do not approve on the user's behalf.";

/**
 * An MCP server (the SDK's `McpServer`) exposing each chain as a tool: input schema from the
 * chain's zod input, annotations from its steps' effects, and results with `metadata` in
 * `structuredContent`. A chain that stops at a confirmation gate returns `awaiting_confirmation`
 * with a `resumeToken`; the client answers with a second call, `confirm_action { resumeToken,
 * approved }`. Client cancellation aborts the run. Connect it to any transport.
 *
 * @example
 * ```ts
 * const runner = createRunner({ invoker, chains: taskChains });
 * const server = serveChains(runner, taskChains, {
 *   name: 'tasks',
 *   version: '1.0.0',
 *   context: (extra) => ({ userId: extra.authInfo?.clientId }),
 * });
 * await server.connect(new StdioServerTransport());
 * ```
 */
export function serveChains(runner: Runner, chains: readonly Chain[], options: ServeChainsOptions): McpServer {
  checkOptions(runner, chains, options);
  const server = new McpServer(
    { name: options.name, version: options.version },
    { ...(options.instructions !== undefined && { instructions: options.instructions }) },
  );
  const contextOf = (extra: McpRequestExtra): Promise<Record<string, unknown> | undefined> =>
    trustedContext(options.context, extra, 'serveChains');

  for (const chain of chains) {
    const effects = chain.plan.flatMap((p) => (p.tool ? [p.tool.effect] : []));
    server.registerTool(
      chain.name,
      {
        title: titleOf(chain.name),
        description: chain.description,
        inputSchema: chain.input as z.ZodObject,
        outputSchema: resultEnvelope(chain),
        annotations: {
          readOnlyHint: effects.every((e) => e === 'read'),
          destructiveHint: effects.includes('destructive'),
          idempotentHint: false,
          openWorldHint: true,
        },
      },
      async (input: unknown, extra: McpRequestExtra) => {
        const context = await contextOf(extra);
        const run: ParsedInputOptions<Record<string, unknown>> = {
          [INPUT_PARSED]: true, // the SDK parsed it with chain.input, the tool's inputSchema
          signal: extra.signal,
          ...(context !== undefined && { context }),
          ...(extra.sessionId !== undefined && { sessionId: extra.sessionId }),
        };
        const result = await runner.run(chain, input, run);
        return toCallResult(result);
      },
    );
  }

  server.registerTool(
    CONFIRM_TOOL,
    {
      title: 'Confirm or cancel an action',
      // Resumes any of the chains: its result is the envelope with any chain's output.
      outputSchema: envelope(z.unknown()),
      description:
        'Answer a confirmation question that a previous tool call returned (status awaiting_confirmation): ' +
        'approved true to go ahead, false to cancel.',
      inputSchema: z.object({
        resumeToken: z.string().min(1).describe('The resumeToken of the awaiting_confirmation result'),
        approved: z.boolean().describe("The user's answer: true to go ahead, false to cancel"),
      }),
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    async ({ resumeToken, approved }, extra) => {
      const context = await contextOf(extra);
      const result = await runner.resume(
        resumeToken,
        { approved },
        { chain: chains, signal: extra.signal, ...(context !== undefined && { context }) },
      );
      return toCallResult(result);
    },
  );
  return server;
}

/** `find_and_delete` → `Find and delete`: a human-readable tool title from the chain name. */
function titleOf(name: string): string {
  const words = name.replace(/[_.-]+/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * The JSON Schema of a chain's result, where the chain declares it: the last step's output schema
 * (a tool's, or a compute step's `output`). A chain with its own `output` function, or ending in a
 * select step, has no declared result schema: any value.
 */
function chainResultSchema(chain: Chain): Record<string, unknown> {
  const last = chain.plan.at(-1);
  if (chain.output !== undefined || !last) return {};
  const schema: Schema | undefined = last.tool ? last.tool.output : (last.step as { output?: Schema }).output;
  return schema === undefined ? {} : schemaToJSONSchema(schema, 'output');
}

function resultEnvelope(chain: Chain): z.ZodObject {
  const json = chainResultSchema(chain);
  if (Object.keys(json).length === 0) return envelope(z.unknown());
  try {
    // Built back into zod because the MCP SDK takes zod output schemas; it validates results against it.
    return envelope(z.fromJSONSchema(json as Parameters<typeof z.fromJSONSchema>[0]));
  } catch {
    return envelope(z.unknown()); // a schema zod cannot read back: declare the envelope, any output
  }
}

/**
 * What a served tool returns in `structuredContent` (see `toModelResult`): one object whose
 * `status` says which fields are set; `output` is the chain's result. MCP requires an object schema.
 */
function envelope(output: z.ZodType): z.ZodObject {
  return z.looseObject({
    status: z.enum(['completed', 'awaiting_confirmation', 'declined', 'failed', 'in_doubt', 'waiting']),
    output: output.optional().describe("completed: the chain's result"),
    resumeToken: z.string().optional().describe('awaiting_confirmation: pass to confirm_action'),
    prompt: z.string().optional().describe('awaiting_confirmation: the question for the user'),
    instructions: z.string().optional(),
    step: z.string().optional(),
    tool: z.string().optional(),
    expiresAt: z.string().optional(),
    until: z.string().optional().describe('waiting: when the run goes on by itself'),
    signal: z.string().optional().describe('waiting: the signal it waits for'),
    message: z.string().optional(),
    error: z
      .looseObject({
        category: z.enum(ERROR_CATEGORIES),
        code: z.string(),
        message: z.string(),
        userMessage: z.string(),
        suggestions: z.array(z.string()),
        retryable: z.boolean(),
      })
      .optional()
      .describe('failed: what went wrong and what to do'),
    compensated: z.array(z.string()).optional(),
    metadata: z.looseObject({}),
  });
}

function toCallResult(result: RunResult): CallToolResult {
  const relayed = toModelResult(result, { howToConfirm: HOW_TO_CONFIRM });
  // structuredContent must be a JSON object; a round trip drops what JSON cannot carry, as the wire would.
  let structured: Record<string, unknown>;
  let text: string;
  try {
    structured = JSON.parse(JSON.stringify(relayed)) as Record<string, unknown>;
    text = modelSummary(relayed);
  } catch {
    // An output JSON cannot hold (a BigInt, nesting deeper than the stack): the run's end is still told,
    // since what it did is done, without the output.
    text = `The chain ${result.status === 'completed' ? 'completed' : 'ended'}, but its output cannot be sent as JSON.`;
    const { output: _unsent, ...rest } = relayed as ModelResult & { output?: unknown };
    structured = JSON.parse(JSON.stringify({ ...rest, message: text })) as Record<string, unknown>;
  }
  return {
    content: [{ type: 'text', text }],
    structuredContent: structured,
    ...(result.status === 'failed' && { isError: true }),
  };
}

function checkOptions(runner: Runner, chains: readonly Chain[], options: ServeChainsOptions): void {
  const problems: { path: string; message: string }[] = [];
  if (typeof runner?.run !== 'function' || typeof runner.resume !== 'function')
    problems.push({ path: 'runner', message: 'Expected a runner made by createRunner().' });
  if (typeof options?.name !== 'string' || options.name === '')
    problems.push({ path: 'options.name', message: 'Expected the server `name` to be a non-empty string.' });
  if (typeof options?.version !== 'string' || options.version === '')
    problems.push({ path: 'options.version', message: 'Expected the server `version` to be a non-empty string.' });
  if (
    options?.context !== undefined &&
    typeof options.context !== 'function' &&
    (typeof options.context !== 'object' || options.context === null)
  ) {
    problems.push({
      path: 'options.context',
      message: 'Expected `context` to be an object or a function of the request.',
    });
  }
  if (!Array.isArray(chains) || chains.length === 0)
    problems.push({ path: 'chains', message: 'Expected a non-empty array of chains.' });
  const seen = new Set<string>([CONFIRM_TOOL]);
  (Array.isArray(chains) ? chains : []).forEach((chain, i) => {
    if (!isChain(chain))
      return void problems.push({ path: `chains[${i}]`, message: 'Expected a chain made by defineChain().' });
    if (seen.has(chain.name))
      problems.push({ path: `chains[${i}]`, message: `Two tools would be named '${chain.name}'.` });
    seen.add(chain.name);
    // MCP tool arguments are always an object.
    if ((chain.input as { _zod?: { def?: { type?: string } } })._zod?.def?.type !== 'object') {
      problems.push({
        path: `chains[${i}].input`,
        message: `Chain ${chain.name}'s input must be a z.object(...) to be served as an MCP tool.`,
      });
    }
  });
  if (problems.length > 0) throw new DefinitionError('serveChains', problems);
}
