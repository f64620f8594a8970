// Issue 26 §3: `resume(token, decision, { context })` without `chain` is typed by the runner's
// `chains` (the union of their outputs); `unknown` for a runner given none.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, createRunner, type Chain, type RunResult } from 'chainkit';
import { searchContacts, sendEmail, type Contact } from './fixtures.js';

const invoker = async () => ({});
const find = chain('find', { input: z.object({ name: z.string() }), context: z.object({ userId: z.string() }) })
  .tool('found', searchContacts, (ref) => ({ query: ref('input', 'name') }))
  .output((s) => s.results.found.contacts);
const mail = chain('mail', { input: z.object({ to: z.string() }) })
  .tool('sent', sendEmail, (ref) => ({ to: ref('input', 'to'), subject: 's', body: 'b' }), { confirm: { prompt: 'Send?' } })
  .build();

describe('resume without `chain`', () => {
  it('is typed by the chains the runner was given', async () => {
    const one = createRunner({ invoker, chains: [find] });
    expectTypeOf(await one.resume('token', { approved: true }, { context: { userId: 'u' } })).toEqualTypeOf<RunResult<Contact[]>>();
    const two = createRunner({ invoker, chains: [find, mail] });
    expectTypeOf(await two.resume('token', { approved: true })).toEqualTypeOf<RunResult<Contact[] | { messageId: string }>>();
    const decided = await two.decide('run-1', { approved: true, by: 'ops:alice' });
    expectTypeOf(decided).toEqualTypeOf<RunResult<Contact[] | { messageId: string }> | 'not_found' | 'not_parked'>();
    // `chain` still narrows it, and an explicit type still wins.
    expectTypeOf(await two.resume('token', { approved: true }, { chain: mail })).toEqualTypeOf<RunResult<{ messageId: string }>>();
    expectTypeOf(await two.resume<{ title: string }>('token', { approved: true })).toEqualTypeOf<RunResult<{ title: string }>>();
  });

  it('is unknown for a runner given no chains, or chains not known by type', async () => {
    expectTypeOf(await createRunner({ invoker }).resume('token', { approved: true })).toEqualTypeOf<RunResult<unknown>>();
    const anyChains: Chain[] = [find, mail];
    expectTypeOf(await createRunner({ invoker, chains: anyChains }).resume('token', { approved: true })).toEqualTypeOf<RunResult<unknown>>();
    expectTypeOf(await createRunner({ invoker, chains: [] }).resume('token', { approved: true })).toEqualTypeOf<RunResult<unknown>>();
  });
});
