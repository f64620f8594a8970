// Tools on an MCP server: an invoker that calls them and definitions read from `tools/list`.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorCode, McpError, type CallToolResult, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Schema } from '../define/schema.js';
import { defineTool, type Tool, type ToolEffect } from '../define/tool.js';
import type { ErrorCategory } from '../errors/categories.js';
import { DefinitionError, isDefinitionError, type DefinitionIssue } from '../errors/definition-error.js';
import { servedNames } from '../invokers/serves.js';
import type { ToolInvoker } from '../invokers/types.js';

/**
 * A failed MCP tool call: an `isError` result or a protocol error. `category` (when the failure
 * says what it is) and `code` drive classification and retries like any other tool error.
 *
 * @example
 * ```ts
 * try { await invoker(call); } catch (e) { if (e instanceof McpToolError) console.log(e.category, e.code); }
 * ```
 */
export class McpToolError extends Error {
  override readonly name = 'McpToolError';
  constructor(
    message: string,
    /** The error category, when the failure tells; otherwise the message is classified. */
    readonly category: ErrorCategory | undefined,
    /**
     * `invalid_arguments`, `unknown_tool`, `request_timeout`, `connection_closed`, `invalid_result`,
     * `transport_error`, `mcp_<n>`, an in-band code, or `tool_error`.
     */
    readonly code: string,
    /** From an in-band `retry_after` (seconds) in the error result. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

// The call's signal bounds every request; the SDK's own 60 s default would cut long tools short.
const NO_SDK_TIMEOUT = 2_147_483_647;
const MAX_DETAIL = 500;

/** The most tools `toolsFromMcp` lists before it refuses a server that keeps paging. */
const MAX_LISTED_TOOLS = 10_000;

const PROTOCOL: Partial<Record<number, [ErrorCategory, string]>> = {
  [ErrorCode.InvalidParams]: ['invalid_input', 'invalid_arguments'],
  [ErrorCode.MethodNotFound]: ['not_found', 'unknown_tool'],
  [ErrorCode.RequestTimeout]: ['timeout', 'request_timeout'],
  [ErrorCode.ConnectionClosed]: ['network', 'connection_closed'],
  [ErrorCode.InternalError]: ['internal', 'mcp_internal_error'],
  [ErrorCode.InvalidRequest]: ['invalid_input', 'invalid_request'],
};

/**
 * An invoker that calls tools on an MCP server through a connected SDK `Client`. The output is
 * `structuredContent` when present, else the text content parsed as JSON, else the text. An
 * `isError` result fails with its text, classified (`-32602`/invalid arguments → `invalid_input`,
 * unknown tool → `not_found`, an in-band `{ error, retry_after }` body by its code, else by the
 * message patterns); protocol errors are classified by their JSON-RPC code. The call's `signal`
 * cancels the request (the server receives `notifications/cancelled`). Write and destructive calls
 * carry their idempotency key in `_meta['chainkit/idempotencyKey']`. With `tools` (the server's
 * tools, e.g. `await toolsFromMcp(client)`), the invoker declares them (`ToolInvoker.serves`): a
 * runner refuses a chain with any other tool before its first step.
 *
 * @example
 * ```ts
 * const client = new Client({ name: 'my-app', version: '1.0.0' });
 * await client.connect(new StdioClientTransport({ command: 'task-server' }));
 * const tools = await toolsFromMcp(client);
 * const runner = createRunner({ invoker: mcpInvoker(client, { tools }), tools });
 * ```
 */
export function mcpInvoker(client: Client, options: { tools?: readonly (Tool | string)[] } = {}): ToolInvoker {
  if (typeof client?.callTool !== 'function')
    throw new TypeError('Expected a connected MCP Client from @modelcontextprotocol/sdk.');
  const served = options.tools === undefined ? undefined : servedNames(options.tools);
  const invoker: ToolInvoker = async (call) => {
    const args = call.input === undefined ? {} : call.input;
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw new McpToolError(
        `${call.tool}: MCP tool arguments must be an object.`,
        'invalid_input',
        'invalid_arguments',
      );
    }
    const params = {
      name: call.tool,
      arguments: args as Record<string, unknown>,
      ...(call.idempotencyKey !== undefined && { _meta: { 'chainkit/idempotencyKey': call.idempotencyKey } }),
    };
    let result: CallToolResult;
    try {
      result = (await client.callTool(params, undefined, {
        signal: call.signal,
        timeout: NO_SDK_TIMEOUT,
      })) as CallToolResult;
    } catch (error) {
      if (call.signal.aborted) throw call.signal.reason; // the run's own timeout or cancel
      throw protocolFailure(call.tool, error);
    }
    if (result.isError) throw resultFailure(call.tool, result);
    return outputOf(result);
  };
  if (served) invoker.serves = (tool) => served.has(tool);
  return invoker;
}

function textOf(result: CallToolResult): string | undefined {
  const texts = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
  return texts.length > 0 ? texts.join('\n') : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function outputOf(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const text = textOf(result);
  if (text === undefined) return result.content; // images, audio, resources: handed over as they are
  const json = parseJson(text);
  return json === undefined ? text : json;
}

function protocolFailure(tool: string, error: unknown): McpToolError {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof McpError) {
    const known = Object.hasOwn(PROTOCOL, error.code) ? PROTOCOL[error.code] : undefined;
    return new McpToolError(`${tool}: ${message}`, known?.[0], known?.[1] ?? `mcp_${error.code}`);
  }
  // The SDK refused the server's answer (its shape): the call was made and may have taken effect, and
  // asking again would get the same answer, so it is not a network fault to retry.
  if (error instanceof Error && Array.isArray((error as { issues?: unknown }).issues)) {
    return new McpToolError(
      `${tool}: the server's result could not be read, though the call may have taken effect: ${message}`,
      'validation',
      'invalid_result',
    );
  }
  // Transport failures (a closed pipe, a dead process) are network trouble.
  return new McpToolError(`${tool}: ${message}`, 'network', 'transport_error');
}

function resultFailure(tool: string, result: CallToolResult): McpToolError {
  const text = (textOf(result) ?? 'The tool reported an error.').slice(0, MAX_DETAIL);
  const body = result.structuredContent ?? parseJson(text);
  if (typeof body === 'object' && body !== null && typeof (body as { error?: unknown }).error === 'string') {
    const b = body as { error: string; message?: unknown; retry_after?: unknown };
    const retryAfterMs = typeof b.retry_after === 'number' && b.retry_after >= 0 ? b.retry_after * 1000 : undefined;
    const detail = typeof b.message === 'string' ? `${b.error}: ${b.message}` : b.error;
    // No category: the in-band code (rate_limit_exceeded, …) is classified like any tool's.
    return new McpToolError(`${tool}: ${detail}`, undefined, b.error, retryAfterMs);
  }
  // The SDK reports an unknown tool as -32602 too ("Tool x not found"), so that test comes first.
  if (/-32601|unknown tool|tool \S+ not found/i.test(text))
    return new McpToolError(`${tool}: ${text}`, 'not_found', 'unknown_tool');
  if (/-32602|invalid arguments|input validation/i.test(text))
    return new McpToolError(`${tool}: ${text}`, 'invalid_input', 'invalid_arguments');
  return new McpToolError(`${tool}: ${text}`, undefined, 'tool_error');
}

/** Options of {@link toolsFromMcp}. */
export interface ToolsFromMcpOptions {
  /**
   * Effects by tool name, overriding the server's annotations. Without either, a tool is
   * `read` when annotated `readOnlyHint`, `destructive` when annotated `destructiveHint: true`,
   * else `write`. A name the server does not list is refused (`DefinitionError`): a typo would
   * leave the tool it meant ungated.
   */
  effects?: Record<string, ToolEffect>;
  /** Per-attempt timeout of every tool (default: chainkit's default, 10 s). */
  timeoutMs?: number;
  /**
   * Cancels the listing: the pending `tools/list` request is
   * cancelled and the promise rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/**
 * Tool definitions for every tool an MCP server lists, so chains can be declared over them. Input
 * is validated with a zod schema built from the server's JSON Schema (`z.fromJSONSchema`); the
 * output schema too, when the server declares one (else any output is accepted). With zod 4.1
 * (no `z.fromJSONSchema`; it came in 4.2), or a schema zod cannot read, a tool keeps the server's
 * JSON Schema as is (what a model is offered) but checks only that its input is an object and not
 * its output: the server enforces its own schema, and refs into the output are not checked statically.
 * A listed tool chainkit cannot take (a name outside `^[A-Za-z][\w.-]{0,63}$`), or an `effects`
 * entry naming no listed tool, is refused: one `DefinitionError` names every such problem.
 *
 * @example
 * ```ts
 * const tools = await toolsFromMcp(client, { signal: AbortSignal.timeout(5000) });
 * const listTasks = tools.find((t) => t.name === 'list_tasks')!;
 * ```
 */
export async function toolsFromMcp(client: Client, options: ToolsFromMcpOptions = {}): Promise<Tool[]> {
  if (typeof client?.listTools !== 'function')
    throw new TypeError('Expected a connected MCP Client from @modelcontextprotocol/sdk.');
  const listed: McpTool[] = [];
  let cursor: string | undefined;
  const seen = new Set<string>();
  const signal = options.signal;
  do {
    signal?.throwIfAborted();
    const page = await client.listTools(cursor === undefined ? undefined : { cursor }, signal ? { signal } : undefined);
    listed.push(...page.tools);
    cursor = page.nextCursor;
    // A server that pages forever (a cursor seen before, or more tools than any agent is given) is refused.
    if (cursor !== undefined && (seen.has(cursor) || listed.length > MAX_LISTED_TOOLS)) {
      const why = seen.has(cursor) ? 'a cursor came back' : `over ${MAX_LISTED_TOOLS} tools`;
      throw new McpToolError(`The MCP server's tools/list did not end (${why}).`, 'invalid_input', 'endless_listing');
    }
    if (cursor !== undefined) seen.add(cursor);
  } while (cursor);
  const tools: Tool[] = [];
  const refused: DefinitionIssue[] = [];
  const effects = options.effects ?? {};
  for (const t of listed) {
    try {
      tools.push(
        defineTool({
          name: t.name,
          description: t.description ?? t.title ?? t.name,
          input: fromSchema(t.inputSchema, 'input'),
          output: t.outputSchema ? fromSchema(t.outputSchema, 'output') : z.unknown(),
          effect:
            // Own entries only: a tool named `toString` would read Object.prototype's.
            (Object.hasOwn(effects, t.name) ? effects[t.name] : undefined) ??
            (t.annotations?.readOnlyHint ? 'read' : t.annotations?.destructiveHint === true ? 'destructive' : 'write'),
          ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
        }),
      );
    } catch (error) {
      if (!isDefinitionError(error)) throw error;
      const at = `tools[${JSON.stringify(t.name)}]`;
      for (const issue of error.issues) refused.push({ ...issue, path: issue.path ? `${at}.${issue.path}` : at });
    }
  }
  // An effect for a tool the server does not list is a typo or a stale name: the tool it meant would
  // run ungated (a `destructive` lost), so it is refused rather than ignored.
  const names = new Set(listed.map((t) => t.name));
  for (const name of Object.keys(effects))
    if (!names.has(name))
      refused.push({
        path: `effects[${JSON.stringify(name)}]`,
        message: `names no tool the server lists (${[...names].slice(0, 20).join(', ') || 'it lists none'}).`,
      });
  // Every tool that cannot be taken, in one error (as a chain's definition problems are).
  if (refused.length > 0) throw new DefinitionError('tools listed by the MCP server', refused);
  return tools;
}

function fromSchema(schema: object, io: 'input' | 'output'): Schema {
  // `z.fromJSONSchema` is zod 4.2+; the peer range starts at 4.1.
  if (typeof z.fromJSONSchema === 'function') {
    try {
      return z.fromJSONSchema(withoutPatterns(schema) as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      // A schema zod cannot read is left to the server to enforce, rather than refusing the tool.
    }
  }
  return jsonSchemaOnly(schema, io);
}

// Keywords whose value is a schema, a list of schemas, or (SCHEMA_MAPS) schemas by name.
const SCHEMA_KEYWORDS = new Set([
  'items',
  'prefixItems',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contains',
  'propertyNames',
  'not',
  'anyOf',
  'oneOf',
  'allOf',
  'if',
  'then',
  'else',
]);
const SCHEMA_MAPS = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);

/**
 * The schema without its regular expressions (`pattern`, `patternProperties`): a server's pattern such as
 * `^(a+)+$` would run in this process on every call and can hold the event loop for minutes. The server
 * enforces its own schema.
 */
function withoutPatterns(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutPatterns);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'pattern' || key === 'patternProperties') continue;
    if (SCHEMA_KEYWORDS.has(key)) out[key] = withoutPatterns(value);
    else if (SCHEMA_MAPS.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, withoutPatterns(s)]));
    } else out[key] = value;
  }
  return out;
}

const NOT_AN_OBJECT = [{ message: 'Expected an object (the MCP server checks the rest of its input schema).' }];

/**
 * The server's JSON Schema as a Standard Schema with Standard JSON Schema: exported unchanged (what a
 * model is offered), while validation accepts any object as input and any output.
 */
function jsonSchemaOnly(schema: object, io: 'input' | 'output'): Schema {
  const asJson = (): Record<string, unknown> => ({ ...schema });
  const standard = {
    version: 1 as const,
    vendor: 'chainkit-mcp',
    validate: (value: unknown) =>
      io === 'output' || (typeof value === 'object' && value !== null && !Array.isArray(value))
        ? { value }
        : { issues: NOT_AN_OBJECT },
    jsonSchema: { input: asJson, output: asJson },
  };
  return { '~standard': standard };
}
