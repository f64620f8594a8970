// API.md §12: chains that run chains — sub-chain input mappings, forEach item refs and results, branch unions, loops.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, defineChain, ref, type ChainErrorInfo, type ChainOutput, type ItemResult } from 'chainkit';
import { searchContacts, sendEmail, type Contact } from './fixtures.js';

const greet = chain('greet', { input: z.object({ to: z.string(), n: z.number().default(1) }) })
  .tool('send', sendEmail, (ref) => ({ to: ref('input', 'to'), subject: 'Hi', body: 'Hello' }))
  .output((s) => ({ id: s.results.send.messageId }));
const tally = chain('tally', { input: z.object({ total: z.number() }) })
  .compute('half', (s) => s.input.total / 2)
  .build();
const poll = chain('poll', { input: z.object({ q: z.string() }) })
  .tool('s', searchContacts, (ref) => ({ query: ref('input', 'q') }))
  .output((s) => ({ ready: s.results.s.total > 0, total: s.results.s.total }));
const sms = chain('sms', { input: z.object({ q: z.string() }) }).compute('code', () => 42).build();

describe('§12 builder: chain, forEach, branch, loop', () => {
  it('types each kind\'s result', () => {
    const c = chain('flow', { input: z.object({ q: z.string(), channel: z.enum(['email', 'sms']) }) })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'q') }))
      .forEach('sent', (ref) => ({ over: ref('search', 'contacts'), chain: greet, input: (item) => ({ to: item('email') }), concurrency: 4 }))
      .forEach('tried', (ref) => ({ over: ref('search', 'contacts'), chain: greet, input: (item) => ({ to: item('name'), n: ref('search', 'total') }), onItemError: 'collect' }))
      .chain('count', tally, (ref) => ({ total: ref('sent', 'length') }))
      .branch('notify', (ref) => ({ on: ref('input', 'channel'), cases: { email: { chain: greet, input: { to: ref('input', 'q') } }, sms } }))
      .loop('wait', { chain: poll, input: (ref) => ({ q: ref('input', 'q') }), until: (out) => out.ready, max: 5, delayMs: 10 })
      .output((s) => {
        expectTypeOf(s.results.sent).toEqualTypeOf<{ id: string }[]>();
        expectTypeOf(s.results.tried).toEqualTypeOf<ItemResult<{ id: string }>[]>();
        expectTypeOf(s.results.count).toEqualTypeOf<number>();
        expectTypeOf(s.results.notify).toEqualTypeOf<{ id: string } | number>();
        expectTypeOf(s.results.wait).toEqualTypeOf<{ ready: boolean; total: number }>();
        return s.results.sent.length;
      });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<number>();
    const r: ItemResult<number> = { ok: false, error: {} as ChainErrorInfo };
    void r;
  });

  it('checks item refs against the element type', () => {
    const b = chain('items', { input: z.object({ q: z.string() }) }).tool('search', searchContacts, (ref) => ({ query: ref('input', 'q') }));
    // @ts-expect-error — "'emial' is not a field of the item: name, id, email"
    b.forEach('x1', (ref) => ({ over: ref('search', 'contacts'), chain: greet, input: (item) => ({ to: item('emial') }) }));
    // @ts-expect-error — `over` must be an array: total is a number
    b.forEach('x2', (ref) => ({ over: ref('search', 'total'), chain: greet, input: () => ({ to: 'a' }) }));
    // @ts-expect-error — the item (a contact) is not a string
    b.forEach('x3', (ref) => ({ over: ref('search', 'contacts'), chain: greet, input: (item) => ({ to: item() }) }));
    // @ts-expect-error — item('name') (a string) does not fit field 'total' (a number)
    b.forEach('x4', (ref) => ({ over: ref('search', 'contacts'), chain: tally, input: (item) => ({ total: item('name') }) }));
    b.forEach('ok', (ref) => ({ over: ref('search', 'contacts'), chain: greet, input: (item) => ({ to: item('email') }) })).output((s) => {
      expectTypeOf(s.results.ok).toEqualTypeOf<{ id: string }[]>();
    });
  });

  it('takes a numeric `on` (the case written as that number), and refuses one of another type', () => {
    const b = chain('levels', { input: z.object({ level: z.number(), urgent: z.boolean(), q: z.string() }) });
    b.branch('by_level', (ref) => ({ on: ref('input', 'level'), cases: { 1: sms, 2: sms } }));
    b.branch('by_fn', () => ({ on: (s) => s.input.level * 2, cases: { 2: sms } }));
    // @ts-expect-error — a boolean names no case
    b.branch('x1', (ref) => ({ on: ref('input', 'urgent'), cases: { a: sms } }));
  });

  it('checks sub-chain input mappings like a tool\'s', () => {
    const b = chain('subs', { input: z.object({ q: z.string(), n: z.number() }) });
    // @ts-expect-error — a number ref into the string field 'to'
    b.chain('x1', greet, (ref) => ({ to: ref('input', 'n') }));
    // @ts-expect-error — 'too' is not a field of greet's input
    b.chain('x2', greet, (ref) => ({ to: ref('input', 'q'), too: 'x' }));
    // @ts-expect-error — required 'to' is not mapped
    b.chain('x3', greet, () => ({ n: 2 }));
    // @ts-expect-error — 'x' is not a field of the input
    b.chain('x4', greet, (ref) => ({ to: ref('input', 'x') }));
    // @ts-expect-error — a branch case's mapping is checked against its chain's input
    b.branch('x5', (ref) => ({ on: ref('input', 'q'), cases: { a: { chain: greet, input: { to: ref('input', 'n') } } } }));
    // @ts-expect-error — a loop without `max`
    b.loop('x6', { chain: poll, input: (ref) => ({ q: ref('input', 'q') }), until: (out) => out.ready });
    b.chain('ok', greet, (ref) => ({ to: ref('input', 'q') }));
  });
});

describe('§12 declarative forms', () => {
  it('infers results by step id', () => {
    const c = defineChain({
      name: 'decl', input: z.object({ q: z.string(), channel: z.string() }),
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'q') } },
        { id: 'sent', forEach: { over: ref('search', 'contacts'), chain: greet, input: { to: ref('item', 'email') } } },
        { id: 'tried', forEach: { over: ref('search', 'contacts'), chain: greet, input: { to: ref('item', 'email') }, onItemError: 'collect' } },
        { id: 'count', chain: tally, input: { total: 3 } },
        { id: 'notify', branch: { on: ref('input', 'channel'), cases: { email: { chain: greet, input: { to: 'a' } } }, default: sms } },
        { id: 'wait', loop: { chain: poll, input: { q: 'x' }, until: (out: { ready: boolean }) => out.ready, max: 3 } },
      ],
      output: (s) => {
        expectTypeOf(s.results.sent).toEqualTypeOf<{ id: string }[]>();
        expectTypeOf(s.results.tried).toEqualTypeOf<ItemResult<{ id: string }>[]>();
        expectTypeOf(s.results.count).toEqualTypeOf<number>();
        expectTypeOf(s.results.notify).toEqualTypeOf<{ id: string } | number>();
        expectTypeOf(s.results.wait).toEqualTypeOf<{ ready: boolean; total: number }>();
        return s.results.search.contacts as Contact[];
      },
    });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<Contact[]>();
  });
});
