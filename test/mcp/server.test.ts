import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  chain,
  createRunner,
  defineChain,
  defineTool,
  DefinitionError,
  findAndDelete,
  memoryRunStore,
  ref,
  taskChains,
} from 'chainkit';
import { serveChains, type McpRequestExtra } from 'chainkit/mcp';
import { createTaskStore, fixtures } from 'chainkit/testing';
import { echo, transformingChain } from '../helpers.js';
import { connectStdio } from './stdio.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

// Each client signs in as a user: the in-memory transport carries authInfo like an HTTP transport would.
async function serve(signedInAs: Record<string, string>) {
  const store = createTaskStore({ users: fixtures.users });
  const runner = createRunner({ invoker: store.invoker });
  const extras: McpRequestExtra[] = [];
  const users: Record<string, string> = { alice: fixtures.alice, bob: fixtures.bob };
  const connect = async (who: string): Promise<Client> => {
    const server = serveChains(runner, taskChains, {
      name: 'tasks',
      version: '1.0.0',
      context: (extra) => {
        extras.push(extra);
        return { userId: users[extra.authInfo!.clientId]! };
      },
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const send = clientSide.send.bind(clientSide);
    clientSide.send = (message, options) =>
      send(message, { ...options, authInfo: { token: `token-${who}`, clientId: who, scopes: [] } });
    await server.connect(serverSide);
    const client = new Client({ name: `client-${who}`, version: '1.0.0' });
    await client.connect(clientSide);
    cleanups.push(
      () => client.close(),
      () => server.close(),
    );
    return client;
  };
  cleanups.push(() => runner.close());
  const clients = Object.fromEntries(
    await Promise.all(Object.keys(signedInAs).map(async (k) => [k, await connect(signedInAs[k]!)] as const)),
  );
  return { store, clients, extras };
}

/** A client connected to `server` in memory; the runner, server and client are closed after the test. */
async function connected(runner: { close(): Promise<void> }, server: ReturnType<typeof serveChains>): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'c', version: '1' });
  await client.connect(clientSide);
  cleanups.push(
    () => runner.close(),
    () => client.close(),
    () => server.close(),
  );
  return client;
}

const call = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as CallToolResult & { structuredContent: Record<string, any> };

describe('serveChains', () => {
  it('lists one tool per chain with its input schema and effects, plus confirm_action', async () => {
    const { clients } = await serve({ a: 'alice' });
    const { tools } = await clients.a!.listTools();
    expect(tools.map((t) => t.name)).toEqual([
      'find_and_update',
      'find_and_delete',
      'find_and_complete',
      'task_summary',
      'confirm_action',
    ]);
    const del = tools.find((t) => t.name === 'find_and_delete')!;
    expect(del.description).toBe(findAndDelete.description);
    expect(del.inputSchema).toMatchObject({
      type: 'object',
      properties: { match: { type: 'string' } },
      required: ['match'],
    });
    expect(del.annotations).toMatchObject({ destructiveHint: true, readOnlyHint: false });
    expect(tools.find((t) => t.name === 'task_summary')!.annotations).toMatchObject({
      readOnlyHint: true,
      destructiveHint: false,
    });
    expect(tools.find((t) => t.name === 'confirm_action')!.inputSchema).toMatchObject({
      required: ['resumeToken', 'approved'],
    });
  });

  it('runs a chain with the trusted context of the request, with metadata in structuredContent', async () => {
    const { clients, extras } = await serve({ a: 'alice' });
    const r = await call(clients.a!, 'task_summary', {});
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({
      status: 'completed',
      output: { total: 5, completed: 2, pending: 3 },
      metadata: { timing: expect.any(Object), suggestions: expect.any(Object) },
    });
    expect(JSON.parse((r.content[0] as { text: string }).text)).toMatchObject({ total: 5 });
    expect(extras[0]).toMatchObject({
      authInfo: { clientId: 'alice' },
      requestId: expect.anything(),
      signal: expect.any(AbortSignal),
    });
  });

  it('a gate is a second call: confirm_action resumes exactly once, and only for the same user', async () => {
    const { clients, store } = await serve({ a: 'alice', b: 'bob' });
    const first = await call(clients.a!, 'find_and_delete', { match: 'dentist' });
    expect(first.structuredContent).toMatchObject({
      status: 'awaiting_confirmation',
      prompt: expect.stringContaining('Dentist appointment'),
      resumeToken: expect.any(String),
    });
    expect((first.content[0] as { text: string }).text).toContain('confirm_action');
    const token = first.structuredContent.resumeToken as string;

    const stolen = await call(clients.b!, 'confirm_action', { resumeToken: token, approved: true });
    expect(stolen.isError).toBe(true);
    expect(stolen.structuredContent.error).toMatchObject({ category: 'confirmation', code: 'context_mismatch' });

    const yes = await call(clients.a!, 'confirm_action', { resumeToken: token, approved: true });
    expect(yes.structuredContent).toMatchObject({ status: 'completed' });
    expect(store.tasks(fixtures.alice).map((t) => t.title)).not.toContain('Dentist appointment');
    const again = await call(clients.a!, 'confirm_action', { resumeToken: token, approved: true });
    expect(again.structuredContent.error).toMatchObject({ code: 'already_used' });
  });

  it('declining changes nothing; bad input and failures are isError results with advice', async () => {
    const { clients, store } = await serve({ a: 'alice' });
    const first = await call(clients.a!, 'find_and_delete', { match: 'milk' });
    const no = await call(clients.a!, 'confirm_action', {
      resumeToken: first.structuredContent.resumeToken,
      approved: false,
    });
    expect(no.structuredContent).toMatchObject({ status: 'declined', step: 'delete' });
    expect(store.tasks(fixtures.alice).map((t) => t.title)).toContain('Buy milk');

    const ambiguous = await call(clients.a!, 'find_and_delete', { match: 'buy' });
    expect(ambiguous.isError).toBe(true);
    expect(ambiguous.structuredContent.error).toMatchObject({
      category: 'ambiguous',
      suggestions: expect.arrayContaining([expect.any(String)]),
    });
    expect((ambiguous.content[0] as { text: string }).text).toContain(ambiguous.structuredContent.error.userMessage);

    const invalid = await call(clients.a!, 'find_and_delete', { match: 42 });
    expect(invalid.isError).toBe(true);
    expect((invalid.content[0] as { text: string }).text).toMatch(/match/);
  });

  it("declares a title and an outputSchema (the result envelope, with the chain's result schema where it is declared) that results match", async () => {
    const { clients } = await serve({ a: 'alice' });
    const { tools } = await clients.a!.listTools();
    const del = tools.find((t) => t.name === 'find_and_delete')!;
    expect(del.title).toBe('Find and delete');
    expect(tools.find((t) => t.name === 'confirm_action')!.title).toEqual(expect.any(String));
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({
        type: 'object',
        required: ['status', 'metadata'],
        properties: {
          status: { enum: ['completed', 'awaiting_confirmation', 'declined', 'failed', 'in_doubt', 'waiting'] },
          resumeToken: { type: 'string' },
          error: { type: 'object' },
        },
      });
    }
    // Every kind of result passes the client's validation against the declared schema.
    expect((await call(clients.a!, 'task_summary', {})).structuredContent.status).toBe('completed');
    const gate = await call(clients.a!, 'find_and_delete', { match: 'groceries' });
    expect(gate.structuredContent.status).toBe('awaiting_confirmation');
    expect(
      (await call(clients.a!, 'confirm_action', { resumeToken: gate.structuredContent.resumeToken, approved: false }))
        .structuredContent.status,
    ).toBe('declined');
    expect(
      (await call(clients.a!, 'find_and_delete', { match: 'no such task anywhere' })).structuredContent.status,
    ).toBe('failed');

    // A chain whose result is its last tool's output declares that tool's output schema.
    const runner = createRunner({ invoker: async (c) => c.input });
    const say = defineChain({
      name: 'say_it',
      version: '1',
      description: 'Echo',
      input: z.object({ value: z.string() }),
      steps: [{ id: 'e', tool: echo, input: { value: ref('input', 'value') } }],
    });
    const server = serveChains(runner, [say], { name: 'echo', version: '1.0.0' });
    const client = await connected(runner, server);
    const listed = (await client.listTools()).tools.find((t) => t.name === 'say_it')!;
    expect(listed.title).toBe('Say it');
    expect(listed.outputSchema!.properties!.output).toMatchObject({
      type: 'object',
      properties: { value: { type: 'string' } },
      required: ['value'],
    });
    expect((await call(client, 'say_it', { value: 'hi' })).structuredContent).toMatchObject({
      status: 'completed',
      output: { value: 'hi' },
    });
  });

  it('a chain that parks waiting for a signal answers status waiting, not a protocol error', async () => {
    const note = defineTool({
      name: 'note',
      description: 'Notes it.',
      effect: 'read',
      input: z.object({}),
      output: z.object({ ok: z.boolean() }),
    });
    const reviewed = chain('review_then_note', { input: z.object({}), timeoutMs: 60_000 })
      .waitFor('reviewed', { signal: 'review', schema: z.object({ ok: z.boolean() }), timeoutMs: 30_000 })
      .tool('n', note, () => ({}))
      .build();
    const runner = createRunner({ invoker: async () => ({ ok: true }), stores: { runs: memoryRunStore() } });
    const server = serveChains(runner, [reviewed], { name: 't', version: '1', context: {} });
    const client = await connected(runner, server);
    const r = await call(client, 'review_then_note', {});
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({ status: 'waiting', step: 'reviewed', signal: 'review' });
  });

  it("a context function that throws fails the call without showing the client the error's text", async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker });
    const server = serveChains(runner, taskChains, {
      name: 't',
      version: '1',
      context: () => {
        throw new Error('session store redis://admin:S3cr3t@10.0.0.1 unreachable');
      },
    });
    const client = await connected(runner, server);
    const r = await call(client, 'task_summary', {});
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r)).not.toMatch(/S3cr3t|redis:/);
    expect(JSON.stringify(r.content)).toContain('context function failed');
  });

  it('confirm_action resumes only the chains the server serves', async () => {
    const store = createTaskStore({ users: fixtures.users });
    const runner = createRunner({ invoker: store.invoker, chains: [...taskChains] });
    const parked = await runner.run(findAndDelete, { match: 'dentist' }, { context: { userId: fixtures.alice } });
    expect(parked.status).toBe('awaiting_confirmation');
    const summaryOnly = taskChains.filter((c) => c.name === 'task_summary');
    const server = serveChains(runner, summaryOnly, { name: 't', version: '1', context: { userId: fixtures.alice } });
    const client = await connected(runner, server);
    const token = parked.status === 'awaiting_confirmation' ? parked.resumeToken : '';
    const r = await call(client, 'confirm_action', { resumeToken: token, approved: true });
    expect(r.structuredContent).toMatchObject({ status: 'failed', error: { code: 'unknown_chain' } });
    expect(store.callCount.delete_task ?? 0).toBe(0);
  });

  it("parses a chain's input once: a transform in its schema runs once, as with runner.run", async () => {
    const { runner, chain, seen } = transformingChain();
    const server = serveChains(runner, [chain], { name: 't', version: '1', context: {} });
    const client = await connected(runner, server);
    const listed = (await client.listTools()).tools.find((t) => t.name === 'save_it')!;
    expect(listed.inputSchema.properties).toMatchObject({ n: { type: 'string' } });
    const r = await call(client, 'save_it', { n: '21' });
    expect(r.structuredContent).toMatchObject({ status: 'completed' });
    expect(seen).toEqual([{ n: 42 }]);
    const bad = await call(client, 'save_it', { n: 21 });
    expect(bad.isError).toBe(true);
    expect(seen).toHaveLength(1);
  });

  it('a chain whose output JSON cannot hold still reports that it completed (its action happened)', async () => {
    const save = defineTool({
      name: 'save',
      description: 'Saves it.',
      effect: 'write',
      input: z.object({ n: z.number() }),
      output: z.object({ id: z.bigint() }),
    });
    const saving = defineChain({
      name: 'save_it',
      description: 'Saves it.',
      input: z.object({ n: z.number() }),
      steps: [{ id: 's', tool: save, input: { n: ref('input', 'n') } }],
    });
    const runner = createRunner({ invoker: async () => ({ id: 7n }) });
    const server = serveChains(runner, [saving], { name: 't', version: '1', context: {} });
    const client = await connected(runner, server);
    const r = await call(client, 'save_it', { n: 1 });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toMatchObject({
      status: 'completed',
      message: expect.stringContaining('cannot be sent'),
    });
    expect(r.structuredContent.output).toBeUndefined();
  });

  it('refuses what cannot be served, listing every problem', () => {
    const runner = createRunner({ invoker: async () => ({}) });
    cleanups.push(() => runner.close());
    const scalar = defineChain({
      name: 'scalar',
      version: '1',
      description: 'x',
      input: z.string(),
      steps: [{ id: 'e', tool: echo, input: { value: 'x' } }],
    });
    const clash = defineChain({
      name: 'confirm_action',
      version: '1',
      description: 'x',
      input: z.object({}),
      steps: [{ id: 'e', tool: echo, input: { value: 'x' } }],
    });
    let error: unknown;
    try {
      serveChains(runner, [scalar, clash, findAndDelete, findAndDelete], { name: '', version: '1' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(DefinitionError);
    expect((error as DefinitionError).issues.map((i) => i.path)).toEqual([
      'options.name',
      'chains[0].input',
      'chains[1]',
      'chains[3]',
    ]);
  });
});

describe('examples/mcp-server.ts over stdio', () => {
  it('serves the task chains to a client process', async () => {
    const client = await connectStdio(new URL('../../examples/mcp-server.ts', import.meta.url));
    cleanups.push(() => client.close());
    const first = await call(client, 'find_and_complete', { match: 'groceries' });
    expect(first.structuredContent).toMatchObject({
      status: 'completed',
      output: expect.objectContaining({ title: 'Buy groceries' }),
    });
    const gate = await call(client, 'find_and_delete', { match: 'book' });
    const done = await call(client, 'confirm_action', {
      resumeToken: gate.structuredContent.resumeToken,
      approved: true,
    });
    expect(done.structuredContent.status).toBe('completed');
  });
});
