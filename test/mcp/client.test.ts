import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createRunner, defineChain, defineTool, isDefinitionError, ref, type Tool, type ToolCall } from 'chainkit';
import { classifyError } from '../../src/errors/classify.js';
import { parseSchema } from '../../src/define/schema.js';
import { McpToolError, mcpInvoker, toolsFromMcp } from 'chainkit/mcp';
import { createToolsServer, type ServerLog } from '../fixtures/mcp-tools-server.js';
import { connectStdio } from './stdio.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function connectInMemory(): Promise<{ client: Client; log: ServerLog; closeServer: () => Promise<void> }> {
  const log: ServerLog = { cancelled: [], deleteMeta: [] };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createToolsServer(log);
  await server.connect(serverSide);
  const client = new Client({ name: 'chainkit-test', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(
    () => client.close(),
    () => server.close(),
  );
  return { client, log, closeServer: () => server.close() };
}

const byName = (tools: Tool[], name: string): Tool => tools.find((t) => t.name === name)!;
const noRetry = {
  rate_limited: { retries: 0 },
  permission_denied: { retries: 0 },
  timeout: { retries: 0 },
  network: { retries: 0 },
};

describe('toolsFromMcp', () => {
  it('defines every listed tool with its effect and a zod schema from its JSON Schema', async () => {
    const { client } = await connectInMemory();
    const tools = await toolsFromMcp(client, { effects: { greet: 'read' } });
    expect(tools.map((t) => [t.name, t.effect])).toEqual([
      ['list_tasks', 'read'],
      ['delete_task', 'destructive'],
      ['greet', 'read'],
      ['busy', 'write'],
      ['broken', 'write'],
      ['slow', 'write'],
    ]);
    const list = byName(tools, 'list_tasks');
    expect(list.description).toBe("List a user's tasks");
    expect(parseSchema(list.input, { user_id: 'u1', status: 'all' }).success).toBe(true);
    const bad = parseSchema(list.input, { user_id: '', status: 'done' });
    expect(bad.success ? [] : bad.error.issues.map((i) => i.path.join('.')).sort()).toEqual(['status', 'user_id']);
    expect(parseSchema(list.output, { tasks: [{ task_id: 't', title: 'x', completed: 'no' }] }).success).toBe(false);
  });
});

describe('toolsFromMcp signal', () => {
  it("rejects with the signal's reason when cancelled mid-listing or before it starts", async () => {
    const { client } = await connectInMemory();
    const ac = new AbortController();
    const listing = toolsFromMcp(client, { signal: ac.signal });
    ac.abort(new Error('user went away'));
    await expect(listing).rejects.toThrow('user went away');
    await expect(toolsFromMcp(client, { signal: AbortSignal.abort(new Error('too late')) })).rejects.toThrow(
      'too late',
    );
    expect((await toolsFromMcp(client, { signal: new AbortController().signal })).length).toBe(6);
  });
});

describe('mcpInvoker', () => {
  it("runs a chain declared over a server's tools: structured output, JSON text output, idempotency key in _meta", async () => {
    const { client, log } = await connectInMemory();
    const tools = await toolsFromMcp(client);
    const chain = defineChain({
      name: 'delete_by_title',
      version: '1',
      description: 'Find a task by title and delete it',
      input: z.object({ match: z.string() }),
      steps: [
        { id: 'find', tool: byName(tools, 'list_tasks'), input: { user_id: 'u1', status: 'all' } },
        {
          id: 'target',
          select: { from: ref('find', 'tasks'), where: { title: { contains: ref('input', 'match') } }, expect: 'one' },
        },
        {
          id: 'delete',
          tool: byName(tools, 'delete_task'),
          input: { user_id: 'u1', task_id: ref('target', 'task_id') },
          confirm: { prompt: 'Delete it?' },
        },
      ],
      output: (s) => s.results.delete,
    });
    const runner = createRunner({ invoker: mcpInvoker(client), tools });
    cleanups.push(() => runner.close());
    const result = await runner.run(chain, { match: 'milk' }, { confirm: () => true });
    expect(result.status === 'completed' && result.output).toEqual({ deleted: true, task_id: 't1' });
    expect(log.deleteMeta).toEqual([expect.objectContaining({ 'chainkit/idempotencyKey': expect.any(String) })]);
    const greet = await runner.invoke('greet', { name: 'Ada' });
    expect(greet.status === 'completed' && greet.output).toBe('hello Ada');
  });

  it('classifies isError results by their text and in-band codes', async () => {
    const { client } = await connectInMemory();
    const runner = createRunner({ invoker: mcpInvoker(client), tools: await toolsFromMcp(client), retry: noRetry });
    cleanups.push(() => runner.close());
    const busy = await runner.invoke('busy', {});
    expect(busy.status === 'failed' && busy.error).toMatchObject({
      category: 'rate_limited',
      code: 'rate_limit_exceeded',
      retryAfterMs: 2000,
    });
    const broken = await runner.invoke('broken', {});
    expect(broken.status === 'failed' && broken.error).toMatchObject({
      category: 'permission_denied',
      message: expect.stringContaining('Permission denied for this workspace'),
    });
    const gone = await runner.invoke('delete_task', { user_id: 'u1', task_id: 'nope' }, { timeoutMs: 5000 });
    expect(gone.status === 'failed' && gone.error.category).toBe('not_found');
  });

  it('classifies invalid arguments as invalid_input and an unknown tool as not_found', async () => {
    const { client } = await connectInMemory();
    const invoker = mcpInvoker(client);
    const call = (tool: string, input: unknown): Promise<unknown> =>
      invoker({
        tool,
        input,
        attempt: 1,
        signal: new AbortController().signal,
        runId: 'r',
        traceId: 't',
        context: {},
        progress: () => undefined,
      } satisfies ToolCall);
    const invalid = await call('list_tasks', { user_id: 42 }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(McpToolError);
    expect(classifyError(invalid)).toMatchObject({ category: 'invalid_input', code: 'invalid_arguments' });
    const unknown = await call('no_such_tool', {}).catch((e: unknown) => e);
    expect(classifyError(unknown)).toMatchObject({ category: 'not_found', code: 'unknown_tool' });
    expect(classifyError(await call('greet', [1]).catch((e: unknown) => e)).category).toBe('invalid_input');
  });

  it('cancels the request on the server when the attempt times out', async () => {
    const { client, log } = await connectInMemory();
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      output: z.unknown(),
      timeoutMs: 50,
      retry: false,
    });
    const runner = createRunner({ invoker: mcpInvoker(client), tools: [slow] });
    cleanups.push(() => runner.close());
    const result = await runner.invoke('slow', {});
    expect(result.status === 'failed' && result.error).toMatchObject({ category: 'timeout', code: 'attempt_timeout' });
    await vi.waitFor(() => expect(log.cancelled).toEqual(['slow']));
  });

  it('fails with network when the connection is gone', async () => {
    const { client, closeServer } = await connectInMemory();
    const runner = createRunner({ invoker: mcpInvoker(client), tools: await toolsFromMcp(client), retry: noRetry });
    cleanups.push(() => runner.close());
    await closeServer();
    const result = await runner.invoke('greet', { name: 'x' });
    expect(result.status === 'failed' && result.error.category).toBe('network');
  });

  it('rejects something that is not a client', () => {
    expect(() => mcpInvoker({} as never)).toThrow(/MCP Client/);
  });
});

describe('over stdio', () => {
  it('lists and calls the tools of a server process', async () => {
    const client = await connectStdio(new URL('../fixtures/mcp-tools-server.ts', import.meta.url));
    cleanups.push(() => client.close());
    const tools = await toolsFromMcp(client);
    const runner = createRunner({ invoker: mcpInvoker(client), tools, retry: noRetry });
    cleanups.push(() => runner.close());
    const list = await runner.invoke('list_tasks', { user_id: 'u1', status: 'all' });
    expect(list.status === 'completed' && list.output).toMatchObject({
      tasks: [{ title: 'Buy milk' }, { title: 'Call the dentist' }],
    });
    const busy = await runner.invoke('busy', {});
    expect(busy.status === 'failed' && busy.error.category).toBe('rate_limited');
  });
});

/** A raw MCP server on an in-memory pair that answers each request as `answer` says (`undefined`: never). */
async function rawServer(answer: (method: string, params: unknown) => unknown, tools: () => unknown = () => []) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const calls: string[] = [];
  serverSide.onmessage = (msg) => {
    if (!('id' in msg) || !('method' in msg)) return;
    calls.push(msg.method);
    const result =
      msg.method === 'initialize'
        ? {
            protocolVersion: (msg.params as { protocolVersion: string }).protocolVersion,
            capabilities: { tools: {} },
            serverInfo: { name: 'raw', version: '1' },
          }
        : msg.method === 'tools/list'
          ? tools()
          : answer(msg.method, msg.params);
    if (result !== undefined) void serverSide.send({ jsonrpc: '2.0', id: msg.id, result: result as never });
  };
  await serverSide.start();
  const client = new Client({ name: 'chainkit-test', version: '1.0.0' });
  await client.connect(clientSide);
  cleanups.push(() => client.close());
  return { client, calls, serverSide };
}

describe('mcpInvoker against a server that misbehaves', () => {
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card.',
    input: z.object({}),
    output: z.unknown(),
    effect: 'write',
  });

  it('does not call a write again when the session closes before its answer: the outcome is unknown', async () => {
    const server = await rawServer(() => {
      setTimeout(() => void server.serverSide.close(), 10); // performs the charge, then the connection drops
      return undefined;
    });
    const runner = createRunner({ invoker: mcpInvoker(server.client), tools: [charge] });
    const r = await runner.invoke('charge', {}, { context: {} });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'network', code: 'connection_closed' });
    expect(r.status === 'failed' && r.error.message).toMatch(/outcome is unknown/);
    expect(server.calls.filter((m) => m === 'tools/call')).toHaveLength(1);
    await runner.close();
  });

  it('does not call a write again when the SDK cannot read its result: the call was made', async () => {
    const server = await rawServer(() => ({ content: 'not an array' }));
    const runner = createRunner({ invoker: mcpInvoker(server.client), tools: [charge] });
    const r = await runner.invoke('charge', {}, { context: {} });
    expect(r.status === 'failed' && r.error).toMatchObject({ category: 'validation', code: 'invalid_result' });
    expect(server.calls.filter((m) => m === 'tools/call')).toHaveLength(1);
    await runner.close();
  });
});

describe('toolsFromMcp against a server that pages forever', () => {
  it('refuses a listing whose cursor comes back, or that passes 10,000 tools', async () => {
    const tool = (i: number) => ({ name: `t${i}`, inputSchema: { type: 'object' } });
    const looping = await rawServer(
      () => undefined,
      () => ({ tools: [tool(0)], nextCursor: 'again' }),
    );
    await expect(toolsFromMcp(looping.client)).rejects.toMatchObject({ code: 'endless_listing' });
    let page = 0;
    const endless = await rawServer(
      () => undefined,
      () => ({ tools: Array.from({ length: 500 }, (_, i) => tool(page * 500 + i)), nextCursor: `p${++page}` }),
    );
    await expect(toolsFromMcp(endless.client)).rejects.toMatchObject({ code: 'endless_listing' });
    expect(page).toBeLessThanOrEqual(21);
  });
});

describe('toolsFromMcp with tools chainkit cannot take', () => {
  it('names every refused tool in one DefinitionError, not just the first', async () => {
    const server = await rawServer(
      () => undefined,
      () => ({
        tools: [
          { name: 'ok_tool', inputSchema: { type: 'object' } },
          { name: '_private', inputSchema: { type: 'object' } },
          { name: 'files/read', inputSchema: { type: 'object' } },
        ],
      }),
    );
    const error = await toolsFromMcp(server.client).catch((e: unknown) => e);
    expect(isDefinitionError(error)).toBe(true);
    expect(String((error as Error).message)).toMatch(/_private[\s\S]*files\/read/);
    expect(String((error as Error).message)).not.toMatch(/ok_tool/);
  });
});

describe('toolsFromMcp effects', () => {
  it('refuses an effect for a tool the server does not list (a typo would leave the tool it meant ungated)', async () => {
    const server = await rawServer(
      () => undefined,
      () => ({
        tools: [
          { name: 'delete_task', inputSchema: { type: 'object' } },
          { name: 'list_tasks', inputSchema: { type: 'object' } },
        ],
      }),
    );
    const error = await toolsFromMcp(server.client, {
      effects: { delet_task: 'destructive', list_tasks: 'read', gone: 'write' },
    }).catch((e: unknown) => e);
    expect(isDefinitionError(error)).toBe(true);
    const issues = (error as { issues: { path: string; message: string }[] }).issues;
    expect(issues.map((i) => i.path)).toEqual(['effects["delet_task"]', 'effects["gone"]']);
    expect(issues[0]!.message).toMatch(/delete_task, list_tasks/);
    const tools = await toolsFromMcp(server.client, { effects: { delete_task: 'destructive' } });
    expect(tools.map((t) => [t.name, t.effect])).toEqual([
      ['delete_task', 'destructive'],
      ['list_tasks', 'write'],
    ]);
  });
});

describe('toolsFromMcp effects of tools named like Object members', () => {
  it('takes a listed toString or constructor tool when effects is given (an inherited member is no effect)', async () => {
    const server = await rawServer(
      () => undefined,
      () => ({
        tools: [
          { name: 'toString', inputSchema: { type: 'object' } },
          { name: 'constructor', inputSchema: { type: 'object' } },
          { name: 'delete_task', inputSchema: { type: 'object' } },
        ],
      }),
    );
    const tools = await toolsFromMcp(server.client, { effects: { delete_task: 'destructive' } });
    expect(tools.map((t) => [t.name, t.effect])).toEqual([
      ['toString', 'write'],
      ['constructor', 'write'],
      ['delete_task', 'destructive'],
    ]);
  });
});

describe('toolsFromMcp against hostile schemas', () => {
  it("does not run a server's regular expressions here: a catastrophic pattern cannot hold the event loop", async () => {
    const server = await rawServer(
      () => ({ content: [{ type: 'text', text: '{"ok":true}' }] }),
      () => ({
        tools: [
          {
            name: 'lookup',
            inputSchema: {
              type: 'object',
              properties: { q: { type: 'string', pattern: '^(a+)+$' }, pattern: { type: 'string' } },
              required: ['q', 'pattern'],
            },
          },
        ],
      }),
    );
    const tools = await toolsFromMcp(server.client, { effects: { lookup: 'read' } });
    const runner = createRunner({ invoker: mcpInvoker(server.client), tools });
    const t0 = Date.now();
    const r = await runner.invoke('lookup', { q: `${'a'.repeat(30)}!`, pattern: 'x' }, { context: {} });
    expect(Date.now() - t0).toBeLessThan(1_000); // the server enforces its pattern
    expect(r.status === 'failed' ? r.error : r.status).toBe('completed');
    const missing = await runner.invoke('lookup', { q: 'a' }, { context: {} }); // a property named `pattern` stays
    expect(missing.status === 'failed' && missing.error.category).toBe('invalid_input');
    await runner.close();
  });
});
