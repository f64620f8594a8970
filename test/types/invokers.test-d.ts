// API.md §2b, tool implementations typed: functionInvoker(tools, impls) and
// createMockInvoker(tools, script) take only those tools, typed by their schemas.
import { describe, expectTypeOf, it } from 'vitest';
import { functionInvoker, type ToolCall, type ToolImplementations, type ToolInvoker } from 'chainkit';
import { createMockInvoker } from 'chainkit/testing';
import { searchContacts, sendEmail, type Contact } from './fixtures.js';

const tools = [searchContacts, sendEmail];
const noContacts: Contact[] = [];

describe('typed invokers', () => {
  it('functionInvoker types each implementation by its tool', () => {
    const invoker = functionInvoker([searchContacts, sendEmail], {
      search_contacts: async ({ query, limit }, call) => {
        expectTypeOf(query).toEqualTypeOf<string>();
        expectTypeOf(limit).toEqualTypeOf<number>();
        expectTypeOf(call).toEqualTypeOf<ToolCall>();
        return { contacts: noContacts, total: 0 };
      },
      send_email: (input) => (input.to.includes('@') ? { messageId: 'm1' } : { status: 'error', error: 'invalid_address', retry_after: 5 }),
    });
    expectTypeOf(invoker).toEqualTypeOf<ToolInvoker>();
    // @ts-expect-error — every tool needs its implementation (send_email is missing)
    functionInvoker(tools, { search_contacts: async () => ({ contacts: noContacts, total: 0 }) });
  });

  it('functionInvoker rejects unknown tools, unknown input fields and wrong outputs', () => {
    functionInvoker([searchContacts], {
      // @ts-expect-error — no tool 'serach_contacts'
      serach_contacts: async () => ({ contacts: [], total: 0 }),
    });
    functionInvoker([searchContacts], {
      // @ts-expect-error — the input has no 'qurey'
      search_contacts: async ({ qurey }) => ({ contacts: [qurey], total: 1 }),
    });
    functionInvoker([searchContacts], {
      // @ts-expect-error — the output needs `total`
      search_contacts: async () => ({ contacts: [] }),
    });
    functionInvoker([sendEmail], {
      // @ts-expect-error — an in-band error needs `error: string`
      send_email: () => ({ status: 'error' }),
    });
  });

  it('functionInvoker accepts in-band errors from functions without parameters, and implementations typed ahead', () => {
    functionInvoker([searchContacts, sendEmail], {
      search_contacts: async () => ({ status: 'error', error: 'busy', retry_after: 1 }),
      send_email: () => ({ status: 'error', error: 'invalid_address' }),
    });
    const impls: ToolImplementations<[typeof searchContacts]> = { search_contacts: async () => ({ contacts: noContacts, total: 0 }) };
    expectTypeOf(functionInvoker([searchContacts], impls)).toEqualTypeOf<ToolInvoker>();
    functionInvoker([sendEmail], {
      // @ts-expect-error — an in-band error's status is 'error'
      send_email: (input) => ({ status: input.to === '' ? 'eror' : 'error', error: 'x' }),
    });
  });

  it('the one-argument form stays untyped', () => {
    expectTypeOf(functionInvoker({ anything: async (input) => input })).toEqualTypeOf<ToolInvoker>();
  });

  it('createMockInvoker types each answer by its tool', () => {
    createMockInvoker([searchContacts, sendEmail], {
      search_contacts: { ok: { contacts: [{ id: '1', name: 'Ada', email: 'ada@x' }], total: 1 }, delayMs: 10 },
      send_email: [{ error: new Error('busy') }, { ok: { status: 'error', error: 'rate_limited', retry_after: 2 } }, (input) => ({ messageId: input.subject })],
    });
    createMockInvoker([searchContacts], {
      // @ts-expect-error — no tool 'send_email' among the tools given
      send_email: { ok: { messageId: 'x' } },
    });
    createMockInvoker([searchContacts], {
      // @ts-expect-error — `contacts` items need id, name and email
      search_contacts: { ok: { contacts: [{ id: '1' }], total: 1 } },
    });
    createMockInvoker([searchContacts], {
      // @ts-expect-error — the input has no 'qurey'
      search_contacts: ({ qurey }) => ({ contacts: [], total: qurey }),
    });
    // The one-argument form keeps working.
    createMockInvoker({ anything: { ok: 1 } });
  });
});
