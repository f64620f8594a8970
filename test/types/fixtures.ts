// Tools shared by the type tests: a search that yields contacts, and an email sender.
import { z } from 'zod';
import { defineTool } from 'chainkit';

export const searchContacts = defineTool({
  name: 'search_contacts',
  description: 'Find contacts by name',
  input: z.object({ query: z.string(), limit: z.number().int().default(10) }),
  output: z.object({ contacts: z.array(z.object({ id: z.string(), name: z.string(), email: z.string() })), total: z.number() }),
  effect: 'read',
});

export const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email',
  input: z.object({ to: z.string(), subject: z.string(), body: z.string(), meta: z.object({ tag: z.string() }).optional() }),
  output: z.object({ messageId: z.string() }),
  effect: 'write',
});

export const setPriority = defineTool({
  name: 'set_priority',
  description: 'Set a priority',
  input: z.object({ id: z.string(), level: z.number(), mode: z.enum(['soft', 'hard']).optional() }),
  output: z.object({ ok: z.boolean() }),
  effect: 'write',
});

export interface Contact {
  id: string;
  name: string;
  email: string;
}

export const emailInput = z.object({ name: z.string(), subject: z.string(), body: z.string() });
export const userContext = z.object({ userId: z.string() });
