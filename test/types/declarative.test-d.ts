// API.md §2b, declarative form: `output` sees every step's result typed by its id, no casts.
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { defineChain, ref, type ChainOutput, type Step } from 'chainkit';
import { emailInput, searchContacts, sendEmail, type Contact } from './fixtures.js';

describe('defineChain infers step results by id', () => {
  it('types tool, select and compute results in output', () => {
    const c = defineChain({
      name: 'email_contact',
      input: emailInput,
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
        { id: 'contact', select: { from: ref('search', 'contacts'), where: { name: { contains: ref('input', 'name') } }, expect: 'one' } },
        { id: 'everyone', select: { from: ref('search', 'contacts'), expect: 'all' } },
        { id: 'count', compute: (s) => s.input.name.length },
        { id: 'later', compute: async () => 'done' },
        { id: 'checked', compute: () => ({ ok: 1 }), output: z.object({ ok: z.coerce.boolean() }) },
        { id: 'send', tool: sendEmail, input: { to: ref('contact', 'email'), subject: ref('input', 'subject'), body: ref('input', 'body') } },
      ],
      output: (s) => {
        expectTypeOf(s.results.search).toEqualTypeOf<{ contacts: Contact[]; total: number }>();
        expectTypeOf(s.results.contact).toEqualTypeOf<Contact>();
        expectTypeOf(s.results.everyone).toEqualTypeOf<Contact[]>();
        expectTypeOf(s.results.count).toEqualTypeOf<number>();
        expectTypeOf(s.results.later).toEqualTypeOf<string>();
        expectTypeOf(s.results.checked).toEqualTypeOf<{ ok: boolean }>();
        expectTypeOf(s.input).toEqualTypeOf<{ name: string; subject: string; body: string }>();
        return { sentTo: s.results.contact.name, messageId: s.results.send.messageId };
      },
    });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<{ sentTo: string; messageId: string }>();
  });

  it('makes an unknown step id or field in output a compile error', () => {
    defineChain({
      name: 'typo',
      input: emailInput,
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
        { id: 'contact', select: { from: ref('search', 'contacts'), expect: 'first' } },
      ],
      output: (s) => ({
        // @ts-expect-error — there is no step 'contcat'
        a: s.results.contcat,
        // @ts-expect-error — contacts have no 'nmae' (the issue's `sentTo: undefined` run)
        b: s.results.contact.nmae,
      }),
    });
  });

  it('without output, the chain outputs the last step result', () => {
    const c = defineChain({
      name: 'last',
      input: emailInput,
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
        { id: 'contact', select: { from: ref('search', 'contacts'), expect: 'first' } },
      ],
    });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<Contact>();
  });

  it('a skippable step may have no result', () => {
    const c = defineChain({
      name: 'maybe',
      input: z.object({ name: z.string(), send: z.boolean() }),
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
        { id: 'send', tool: sendEmail, input: { to: 'a@b.c', subject: 's', body: 'b' }, when: (s) => s.input.send },
      ],
      output: (s) => {
        expectTypeOf(s.results.send).toEqualTypeOf<{ messageId: string } | undefined>();
        return s.results.send?.messageId ?? null;
      },
    });
    expectTypeOf<ChainOutput<typeof c>>().toEqualTypeOf<string | null>();
    // Skipped last step: the output is the result of the step before it.
    const d = defineChain({
      name: 'maybe_last',
      input: z.object({ name: z.string(), send: z.boolean() }),
      steps: [
        { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
        { id: 'send', tool: sendEmail, input: { to: 'a@b.c', subject: 's', body: 'b' }, when: (s) => s.input.send },
      ],
    });
    expectTypeOf<ChainOutput<typeof d>>().toEqualTypeOf<{ messageId: string } | { contacts: Contact[]; total: number }>();
  });

  it('step functions see the typed input and context', () => {
    defineChain({
      name: 'ctx',
      input: emailInput,
      context: z.object({ userId: z.string() }),
      steps: [
        {
          id: 'search', tool: searchContacts,
          input: (s) => {
            expectTypeOf(s.input.name).toEqualTypeOf<string>();
            expectTypeOf(s.context.userId).toEqualTypeOf<string>();
            return { query: s.input.name };
          },
        },
      ],
    });
  });

  it('steps kept in a variable still work, untyped by id', () => {
    const steps: Step[] = [{ id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } }];
    const c = defineChain({ name: 'loose', input: emailInput, steps, output: (s) => s.results.anything });
    expectTypeOf<ChainOutput<typeof c>>().toBeAny();
  });
});

describe('defineChain with shared step objects', () => {
  it('falls back to untyped results when a step id is only known as string', () => {
    const id: string = 'search';
    const shared = { id, tool: searchContacts, input: { query: ref('input', 'name') } };
    const c = defineChain({ name: 'wide', input: emailInput, steps: [shared, { id: 'x', compute: () => 1 }], output: (s) => s.results.whatever });
    expectTypeOf<ChainOutput<typeof c>>().toBeAny();
  });
});
