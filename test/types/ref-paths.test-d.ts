// Issue 23: a typo in a builder ref's path is one error, at the path argument, naming the wrong
// segment and the valid ones at that level (nested paths and indices too).
import { describe, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { chain, type RefPath } from 'chainkit';
import { emailInput, searchContacts, sendEmail, userContext } from './fixtures.js';

const tasksInput = z.object({ tasks: z.array(z.object({ title: z.string() })), name: z.string() });

describe('ref path typos', () => {
  it('the path parameter type is the message', () => {
    // Field names listed in the compiler's order (declaration order for names not seen before).
    type Contact = { cid: string; cname: string; cmail: string };
    expectTypeOf<RefPath<Contact, 'cmial', 'contact'>>().toEqualTypeOf<"'cmial' is not a field of step contact: cid, cname, cmail">();
    expectTypeOf<RefPath<{ tasks: { title: string }[] }, 'tasks.0.titel', 'input'>>().toEqualTypeOf<"'titel' is not a field of tasks.0 in the input: title">();
    expectTypeOf<RefPath<{ tasks: { title: string }[] }, 'tasks.title', 'input'>>().toEqualTypeOf<"'title' is not an index: tasks in the input is an array, so an index comes first (tasks.0.title)">();
    expectTypeOf<RefPath<{ name: string }, 'name.first', 'input'>>().toEqualTypeOf<"'first' is not a field: name in the input is a string">();
    expectTypeOf<RefPath<Contact, 'cmail', 'contact'>>().toEqualTypeOf<'cmail'>();
  });

  it('rejects a wrong segment in a step, the input and the context', () => {
    chain('typos', { input: tasksInput, context: userContext })
      .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }))
      .select('contact', (ref) => ({ from: ref('search', 'contacts'), expect: 'one' }))
      // @ts-expect-error — 'emial' is not a field of step contact
      .tool('a', sendEmail, (ref) => ({ to: ref('contact', 'emial'), subject: 's', body: 'b' }))
      // @ts-expect-error — 'userid' is not a field of the context
      .tool('b', searchContacts, (ref) => ({ query: ref('context', 'userid') }))
      // @ts-expect-error — 'titel' is not a field of tasks.0 in the input
      .tool('c', searchContacts, (ref) => ({ query: ref('input', 'tasks.0.titel') }))
      // @ts-expect-error — bracket indices too
      .tool('d', searchContacts, (ref) => ({ query: ref('input', 'tasks[0].titel') }))
      // @ts-expect-error — the select's `from` path is checked the same way
      .select('e', (ref) => ({ from: ref('search', 'contactz'), expect: 'all' }))
      .tool('ok', sendEmail, (ref) => ({ to: ref('contact', 'email'), subject: ref('input', 'tasks.0.title'), body: ref('search', 'contacts[0].name') }))
      .build();
  });

  it('keeps the value typed after a valid path', () => {
    chain('typed', { input: emailInput })
      .tool('search', searchContacts, (ref) => {
        const r = ref('input', 'name');
        expectTypeOf(r.resolve).returns.toEqualTypeOf<string>();
        return { query: r };
      })
      .build();
  });
});
