// API.md §2b, builder form: every ref, mapping and option is checked where it is written.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, type Chain, type ChainOutput, type ChainRunInput } from 'chainkit';
import { emailInput, searchContacts, sendEmail, setPriority, userContext, type Contact } from './fixtures.js';

describe('chain() builder', () => {
  it('infers results, refs and output without casts', () => {
    const c = chain('email_contact', { input: emailInput, context: userContext, description: 'Email a contact' })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }))
      .select('contact', (ref) => ({ from: ref('search', 'contacts'), where: { name: { contains: ref('input', 'name') } }, expect: 'one' }))
      .tool('send', sendEmail, (ref) => ({ to: ref('contact', 'email'), subject: ref('input', 'subject'), body: ref('input', 'body'), meta: { tag: ref('context', 'userId') } }), {
        confirm: { prompt: (s) => `Send to ${s.results.contact.name}?` },
        idempotencyKey: (s) => `${s.context.userId}:${s.results.contact.id}`,
      })
      .output((s) => {
        expectTypeOf(s.results.search).toEqualTypeOf<{ contacts: Contact[]; total: number }>();
        expectTypeOf(s.results.contact).toEqualTypeOf<Contact>();
        return { sentTo: s.results.contact.name, messageId: s.results.send.messageId };
      });
    expectTypeOf(c).toEqualTypeOf<Chain<
      { name: string; subject: string; body: string }, { userId: string }, { sentTo: string; messageId: string },
      { name: string; subject: string; body: string }, { userId: string }
    >>();
  });

  it('types select results, compute results and skippable steps', () => {
    const c = chain('kinds', { input: z.object({ name: z.string(), loud: z.boolean() }) })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name'), limit: 5 }))
      .select('all', (ref) => ({ from: ref('search', 'contacts'), expect: 'all' }))
      .select('first', (ref) => ({ from: ref('search', 'contacts'), where: (item: Contact, s) => item.name === s.input.name, expect: 'first' }))
      .compute('count', (s) => s.results.all.length)
      .compute('later', async (s) => s.results.first.email)
      .compute('parsed', () => ({ n: '1' }), { output: z.object({ n: z.coerce.number() }) })
      .compute('maybe', () => 1, { when: (s) => s.input.loud })
      .output((s) => {
        expectTypeOf(s.results.all).toEqualTypeOf<Contact[]>();
        expectTypeOf(s.results.first).toEqualTypeOf<Contact>();
        expectTypeOf(s.results.count).toEqualTypeOf<number>();
        expectTypeOf(s.results.later).toEqualTypeOf<string>();
        expectTypeOf(s.results.parsed).toEqualTypeOf<{ n: number }>();
        expectTypeOf(s.results.maybe).toEqualTypeOf<number | undefined>();
        return s.results.count;
      });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<number>();
  });

  it('.build() outputs the last step result; refs read numeric indices', () => {
    const c = chain('first_email', { input: z.object({ name: z.string(), limit: z.number().default(3) }) })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name'), limit: ref('input', 'limit') }))
      .tool('send', sendEmail, (ref) => ({ to: ref('search', 'contacts.0.email'), subject: 'Hi', body: ref('search', 'contacts.0.name') }))
      .build();
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<{ messageId: string }>();
    expectTypeOf<ChainRunInput<typeof c>>().toEqualTypeOf<{ name: string; limit?: number | undefined }>();
  });

  it('rejects refs to unknown sources and paths', () => {
    chain('bad_refs', { input: emailInput })
      // @ts-expect-error — no step 'serach' (yet)
      .tool('a', searchContacts, (ref) => ({ query: ref('serach', 'contacts') }))
      // @ts-expect-error — the input has no 'nmae'
      .tool('b', searchContacts, (ref) => ({ query: ref('input', 'nmae') }))
      // @ts-expect-error — no context schema declared
      .tool('c', searchContacts, (ref) => ({ query: ref('context', 'userId') }))
      // @ts-expect-error — 'contacts.id': contacts is an array, the path needs an index
      .tool('d', sendEmail, (ref) => ({ to: ref('b', 'contacts.id'), subject: 's', body: 'b' }))
      .build();
    chain('later_ref', { input: emailInput })
      // @ts-expect-error — a step cannot read a later step
      .tool('first', searchContacts, (ref) => ({ query: ref('second', 'total') }))
      .tool('second', searchContacts, (ref) => ({ query: ref('input', 'name') }));
  });

  it('rejects mapping fields that do not exist or do not fit', () => {
    const b = chain('bad_mapping', { input: z.object({ name: z.string(), n: z.number() }) })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }));
    // @ts-expect-error — 'qurey' is not a field of search_contacts' input
    b.tool('x1', searchContacts, (ref) => ({ query: ref('input', 'name'), qurey: 'x' }));
    // @ts-expect-error — a string ref into a number field
    b.tool('x2', setPriority, (ref) => ({ id: 'a', level: ref('input', 'name') }));
    // @ts-expect-error — a number ref into a string field
    b.tool('x3', setPriority, (ref) => ({ id: ref('input', 'n'), level: 1 }));
    // @ts-expect-error — a literal outside the enum
    b.tool('x4', setPriority, () => ({ id: 'a', level: 1, mode: 'medium' }));
    // @ts-expect-error — required 'level' is not mapped
    b.tool('x5', setPriority, () => ({ id: 'a' }));
    // @ts-expect-error — nested unknown field
    b.tool('x6', sendEmail, () => ({ to: 'a', subject: 's', body: 'b', meta: { tga: 'x' } }));
    // A transform makes a ref fit; optional and defaulted fields may be left out.
    b.tool('ok', setPriority, (ref) => ({ id: ref('input', 'n').transform((n: number) => String(n)), level: ref('search', 'total'), mode: 'hard' }));
  });

  it('rejects bad selects, duplicate ids and unknown results in options', () => {
    const b = chain('bad_select', { input: emailInput })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }));
    // @ts-expect-error — from must be an array
    b.select('s1', (ref) => ({ from: ref('search', 'total'), expect: 'one' }));
    // @ts-expect-error — items have no field 'nmae'
    b.select('s2', (ref) => ({ from: ref('search', 'contacts'), where: { nmae: { equals: 'x' } }, expect: 'one' }));
    // @ts-expect-error — 'name' is a string
    b.select('s3', (ref) => ({ from: ref('search', 'contacts'), where: { name: { equals: 3 } }, expect: 'one' }));
    // @ts-expect-error — a predicate's item annotation must fit the items of `from`
    b.select('s5', (ref) => ({ from: ref('search', 'contacts'), where: (item: { title: string }) => item.title === '', expect: 'one' }));
    // @ts-expect-error — expect is 'one' | 'first' | 'all'
    b.select('s4', (ref) => ({ from: ref('search', 'contacts'), expect: 'single' }));
    // @ts-expect-error — 'search' is already a step id
    b.tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }));
    // @ts-expect-error — 'input' is reserved
    b.compute('input', () => 1);
    // @ts-expect-error — no result 'contact' yet in the step options
    b.tool('send', sendEmail, () => ({ to: 'a', subject: 's', body: 'b' }), { confirm: { prompt: (s) => s.results.contact.name } });
    // @ts-expect-error — output reads a step that does not exist
    b.output((s) => s.results.nope);
  });

  it('types a 30-step chain without hitting the instantiation depth limit', () => {
    const long = chain('thirty', { input: z.object({ v: z.string() }), context: userContext })
      .tool('s1', sendEmail, (ref) => ({ to: ref('input', 'v'), subject: ref('context', 'userId'), body: 'b' }))
      .tool('s2', sendEmail, (ref) => ({ to: ref('s1', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s1.messageId } })
      .compute('s3', (s) => ({ messageId: s.results.s2.messageId }))
      .tool('s4', sendEmail, (ref) => ({ to: ref('s3', 'messageId'), subject: ref('s1', 'messageId'), body: ref('input', 'v') }))
      .tool('s5', sendEmail, (ref) => ({ to: ref('s4', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s4.messageId } })
      .compute('s6', (s) => ({ messageId: s.results.s5.messageId }))
      .tool('s7', sendEmail, (ref) => ({ to: ref('s6', 'messageId'), subject: ref('s4', 'messageId'), body: ref('input', 'v') }))
      .tool('s8', sendEmail, (ref) => ({ to: ref('s7', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s7.messageId } })
      .compute('s9', (s) => ({ messageId: s.results.s8.messageId }))
      .tool('s10', sendEmail, (ref) => ({ to: ref('s9', 'messageId'), subject: ref('s7', 'messageId'), body: ref('input', 'v') }))
      .tool('s11', sendEmail, (ref) => ({ to: ref('s10', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s10.messageId } })
      .compute('s12', (s) => ({ messageId: s.results.s11.messageId }))
      .tool('s13', sendEmail, (ref) => ({ to: ref('s12', 'messageId'), subject: ref('s10', 'messageId'), body: ref('input', 'v') }))
      .tool('s14', sendEmail, (ref) => ({ to: ref('s13', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s13.messageId } })
      .compute('s15', (s) => ({ messageId: s.results.s14.messageId }))
      .tool('s16', sendEmail, (ref) => ({ to: ref('s15', 'messageId'), subject: ref('s13', 'messageId'), body: ref('input', 'v') }))
      .tool('s17', sendEmail, (ref) => ({ to: ref('s16', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s16.messageId } })
      .compute('s18', (s) => ({ messageId: s.results.s17.messageId }))
      .tool('s19', sendEmail, (ref) => ({ to: ref('s18', 'messageId'), subject: ref('s16', 'messageId'), body: ref('input', 'v') }))
      .tool('s20', sendEmail, (ref) => ({ to: ref('s19', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s19.messageId } })
      .compute('s21', (s) => ({ messageId: s.results.s20.messageId }))
      .tool('s22', sendEmail, (ref) => ({ to: ref('s21', 'messageId'), subject: ref('s19', 'messageId'), body: ref('input', 'v') }))
      .tool('s23', sendEmail, (ref) => ({ to: ref('s22', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s22.messageId } })
      .compute('s24', (s) => ({ messageId: s.results.s23.messageId }))
      .tool('s25', sendEmail, (ref) => ({ to: ref('s24', 'messageId'), subject: ref('s22', 'messageId'), body: ref('input', 'v') }))
      .tool('s26', sendEmail, (ref) => ({ to: ref('s25', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s25.messageId } })
      .compute('s27', (s) => ({ messageId: s.results.s26.messageId }))
      .tool('s28', sendEmail, (ref) => ({ to: ref('s27', 'messageId'), subject: ref('s25', 'messageId'), body: ref('input', 'v') }))
      .tool('s29', sendEmail, (ref) => ({ to: ref('s28', 'messageId'), subject: 'x', body: ref('s1', 'messageId') }), { confirm: { prompt: (s) => s.results.s28.messageId } })
      .compute('s30', (s) => ({ messageId: s.results.s29.messageId }))
      .output((s) => ({ first: s.results.s1.messageId, last: s.results.s30.messageId }));
    expectTypeOf<ChainOutput<typeof long>>().toEqualTypeOf<{ first: string; last: string }>();
  });
});
