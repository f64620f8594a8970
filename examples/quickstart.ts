// Quickstart: declare two tools and a chain, run it against local functions.
// Run: npx tsx examples/quickstart.ts
import { z } from 'zod';
import { createRunner, defineChain, defineTool, formatTrace, functionInvoker, ref } from '../src/index.js';

// 1. Tools: a name, a description the model reads, zod schemas for input and output.
const searchContacts = defineTool({
  name: 'search_contacts',
  description: 'Find contacts by name',
  input: z.object({ query: z.string().min(1) }),
  output: z.object({ contacts: z.array(z.object({ id: z.string(), name: z.string(), email: z.string().email() })) }),
  effect: 'read',
  timeoutMs: 2000,
});
const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email to a contact',
  input: z.object({ to: z.string().email(), subject: z.string(), body: z.string() }),
  output: z.object({ messageId: z.string() }),
  effect: 'write',
});

// 2. A chain: outputs flow into inputs through ref(); defineChain checks every ref against the schemas.
const emailByName = defineChain({
  name: 'email_by_name',
  input: z.object({ name: z.string(), subject: z.string(), body: z.string() }),
  steps: [
    { id: 'search', tool: searchContacts, input: { query: ref('input', 'name') } },
    { id: 'contact', select: { from: ref('search', 'contacts'), where: { name: { contains: ref('input', 'name') } }, expect: 'one' } },
    { id: 'send', tool: sendEmail, input: { to: ref('contact', 'email'), subject: ref('input', 'subject'), body: ref('input', 'body') } },
  ],
  output: (s) => ({ sentTo: s.results.contact.name as string, messageId: s.results.send.messageId as string }),
});

// 3. An invoker: how tools are really called (here: local functions; in production HTTP, MCP, …).
const invoker = functionInvoker({
  search_contacts: async ({ query }: { query: string }) => ({
    contacts: [{ id: 'c1', name: 'Ada Lovelace', email: 'ada@example.com' }, { id: 'c2', name: 'Alan Turing', email: 'alan@example.com' }]
      .filter((c) => c.name.toLowerCase().includes(query.toLowerCase())),
  }),
  send_email: async ({ to }: { to: string }) => ({ messageId: `msg-${to.split('@')[0]}` }),
});

// 4. Run it. Results are data: check `status`, nothing throws for run-time failures.
const runner = createRunner({ invoker });
const result = await runner.run(emailByName, { name: 'ada', subject: 'Hi', body: 'Hello from chainkit' });
if (result.status === 'completed') console.log('sent:', result.output);
else if (result.status === 'failed') console.log('failed:', result.error.userMessage);
console.log(formatTrace(result.trace));

const nobody = await runner.run(emailByName, { name: 'grace', subject: 'Hi', body: '…' });
if (nobody.status === 'failed') console.log(`\nno match → ${nobody.error.category}: ${nobody.error.userMessage}`);
await runner.close();
