// chainkit/mcp's toolsFromMcp when the app's (peer) zod is 4.1, which has no `z.fromJSONSchema` (zod
// 4.2+): chainkit runs on the repo's zod 4.1 copy (`zod-4-1`), and the tools it defines from a
// server's JSON Schemas still work — a chain over them runs, the server enforces its own schema, and
// the JSON Schema a model is offered is the server's, unchanged.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { version } from 'zod/v4/core';
import { createRunner, createToolRegistry, defineChain, ref } from 'chainkit';
import { parseSchema, schemaToJSONSchema } from '../../src/define/schema.js';
import { mcpInvoker, toolsFromMcp } from 'chainkit/mcp';

// chainkit's own imports of zod (src, through vitest's aliases) get zod 4.1, as with a peer install.
vi.mock('zod', async () => await import('zod-4-1'));
vi.mock('zod/v4/core', async () => await import('zod-4-1/v4/core'));

const ADD_INPUT = {
  type: 'object',
  properties: { a: { type: 'number' }, b: { type: 'number' } },
  required: ['a', 'b'],
  additionalProperties: false,
};
const ADD_OUTPUT = { type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'] };

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A server that lists one tool by its JSON Schemas and checks its arguments itself, as servers do. */
async function connect(): Promise<{ client: Client; calls: unknown[] }> {
  const calls: unknown[] = [];
  // The SDK's low-level server (McpServer's own), so the tool is listed with raw JSON Schemas.
  const mcp = new McpServer({ name: 'adder', version: '1.0.0' }, { capabilities: { tools: {} } });
  const server = mcp.server;
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: 'add',
        description: 'Add two numbers',
        inputSchema: ADD_INPUT,
        outputSchema: ADD_OUTPUT,
        annotations: { readOnlyHint: true },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const args = request.params.arguments ?? {};
    calls.push(args);
    const { a, b } = args as { a?: unknown; b?: unknown };
    if (typeof a !== 'number' || typeof b !== 'number')
      return {
        isError: true,
        content: [{ type: 'text', text: 'MCP error -32602: Invalid arguments for tool add: a and b must be numbers' }],
      };
    return { content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }], structuredContent: { sum: a + b } };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await mcp.connect(serverSide);
  const client = new Client({ name: 'chainkit-test', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(
    () => client.close(),
    () => mcp.close(),
  );
  return { client, calls };
}

describe('toolsFromMcp on zod 4.1 (no z.fromJSONSchema)', () => {
  it('runs on zod 4.1 here', () => {
    expect(version).toMatchObject({ major: 4, minor: 1 });
    expect('fromJSONSchema' in z).toBe(false);
  });

  it("defines the server's tools; the JSON Schema a model is offered is the server's own", async () => {
    const { client } = await connect();
    const [add] = await toolsFromMcp(client);
    expect(add).toMatchObject({ name: 'add', description: 'Add two numbers', effect: 'read' });
    expect(schemaToJSONSchema(add!.input, 'input')).toEqual(ADD_INPUT);
    expect(schemaToJSONSchema(add!.output, 'output')).toEqual(ADD_OUTPUT);
    expect(createToolRegistry([add!]).toJSONSchema('complex', { format: 'anthropic' })).toEqual([
      { name: 'add', description: 'Add two numbers', input_schema: ADD_INPUT },
    ]);
  });

  it('checks locally only that the input is an object; the server enforces the rest', async () => {
    const { client, calls } = await connect();
    const [add] = await toolsFromMcp(client);
    expect(parseSchema(add!.input, { a: 1, b: 2 }).success).toBe(true);
    expect(parseSchema(add!.input, 'one and two').success).toBe(false);
    expect(parseSchema(add!.input, { a: 'one' }).success).toBe(true); // not checked here: zod 4.1 cannot read the schema

    const sum = defineChain({
      name: 'sum',
      input: z.object({ a: z.number(), b: z.unknown() }),
      steps: [{ id: 'add', tool: add!, input: { a: ref('input', 'a'), b: ref('input', 'b') } }],
    });
    const runner = createRunner({
      invoker: mcpInvoker(client),
      tools: [add!],
      retry: { invalid_input: { retries: 0 } },
    });
    cleanups.push(() => runner.close());
    const ok = await runner.run(sum, { a: 2, b: 3 });
    expect(ok.status === 'completed' && ok.output).toEqual({ sum: 5 });
    const bad = await runner.run(sum, { a: 2, b: 'three' });
    expect(bad.status === 'failed' && bad.error).toMatchObject({ category: 'invalid_input', step: 'add' });
    expect(calls).toEqual([
      { a: 2, b: 3 },
      { a: 2, b: 'three' },
    ]); // the server saw and refused the bad one
  });
});
