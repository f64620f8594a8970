// API.md §2b, running typed: run/runChain take the schema's input side, require a declared
// context, and type result.output; resume is typed by the chain it is given.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, defineChain, ref, runChain, type RunResult } from 'chainkit';
import { asAiSdkTool } from 'chainkit/ai';
import { asOpenAIAgentsTool } from 'chainkit/openai-agents';
import { searchContacts, userContext, type Contact } from './fixtures.js';

const invoker = async () => ({});

// .default() makes `limit` optional on the way in; .transform() takes the source type (a string).
const search = chain('search', {
  input: z.object({ name: z.string(), limit: z.number().default(5), since: z.string().transform((s) => new Date(s)) }),
  context: userContext,
})
  .tool('found', searchContacts, (ref) => ({ query: ref('input', 'name'), limit: ref('input', 'limit') }))
  .output((s) => {
    expectTypeOf(s.input.since).toEqualTypeOf<Date>();
    expectTypeOf(s.input.limit).toEqualTypeOf<number>();
    return s.results.found.contacts;
  });

const open = defineChain({
  name: 'open',
  input: z.object({ name: z.string() }),
  steps: [{ id: 'found', tool: searchContacts, input: { query: ref('input', 'name') } }],
});

describe('running typed chains', () => {
  it('takes the input side of the schema and types the output', async () => {
    const runner = createRunner({ invoker });
    const r = await runner.run(search, { name: 'Ada', since: '2024-01-01' }, { context: { userId: 'u' } });
    expectTypeOf(r).toEqualTypeOf<RunResult<Contact[]>>();
    if (r.status === 'completed') expectTypeOf(r.output).toEqualTypeOf<Contact[]>();
    // @ts-expect-error — `since` is a string on the way in, not a Date
    void runner.run(search, { name: 'Ada', since: new Date() }, { context: { userId: 'u' } });
    // @ts-expect-error — `name` is required
    void runner.run(search, { since: '2024-01-01' }, { context: { userId: 'u' } });
  });

  it('requires the options and their context when the chain declares a context schema', () => {
    const runner = createRunner({ invoker });
    // @ts-expect-error — options with `context` are required
    void runner.run(search, { name: 'Ada', since: 'x' });
    // @ts-expect-error — `context` is required
    void runner.run(search, { name: 'Ada', since: 'x' }, { sessionId: 's' });
    // @ts-expect-error — the context must match its schema
    void runner.run(search, { name: 'Ada', since: 'x' }, { context: { user: 'u' } });
    // A chain without a context schema runs without options.
    void runner.run(open, { name: 'Ada' });
  });

  it('types runChain the same way', async () => {
    const r = await runChain(search, { name: 'Ada', since: 'x' }, { invoker, context: { userId: 'u' } });
    expectTypeOf(r).toEqualTypeOf<RunResult<Contact[]>>();
    // @ts-expect-error — `context` is required
    void runChain(search, { name: 'Ada', since: 'x' }, { invoker });
    const o = await runChain(open, { name: 'Ada' }, { invoker });
    expectTypeOf(o).toEqualTypeOf<RunResult<{ contacts: Contact[]; total: number }>>();
  });

  it('types resume by the chain it is given', async () => {
    const runner = createRunner({ invoker });
    const one = await runner.resume('token', { approved: true }, { chain: search, context: { userId: 'u' } });
    expectTypeOf(one).toEqualTypeOf<RunResult<Contact[]>>();
    const either = await runner.resume('token', { approved: true }, { chain: [search, open] });
    expectTypeOf(either).toEqualTypeOf<RunResult<Contact[] | { contacts: Contact[]; total: number }>>();
    const byName = await runner.resume('token', { approved: true });
    expectTypeOf(byName).toEqualTypeOf<RunResult<unknown>>();
    const explicit = await runner.resume<{ title: string }>('token', { approved: true });
    expectTypeOf(explicit).toEqualTypeOf<RunResult<{ title: string }>>();
  });

  it('adapters take chains whose input schema has defaults and transforms', () => {
    const runner = createRunner({ invoker });
    void asAiSdkTool(runner, search, { context: { userId: 'u' } });
    void asOpenAIAgentsTool(runner, search, { context: { userId: 'u' } });
  });
});
