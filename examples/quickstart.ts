// Quickstart: declare two tools and a chain, run it against local functions — every ref, mapping
// and result is checked by the compiler, and again by chainkit when the chain is defined.
// Run: npx tsx examples/quickstart.ts
import { z } from 'zod';
import { chain, createRunner, defineTool, formatTrace, functionInvoker } from 'chainkit';

// 1. Tools: a name, a description the model reads, zod schemas for input and output.
const searchContacts = defineTool({
  name: 'search_contacts',
  description: 'Find contacts by name',
  input: z.object({ query: z.string().min(1) }),
  output: z.object({ contacts: z.array(z.object({ id: z.string(), name: z.string(), email: z.email() })) }),
  effect: 'read',
  timeoutMs: 2000,
});
const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email to a contact',
  input: z.object({ to: z.email(), subject: z.string(), body: z.string() }),
  output: z.object({ messageId: z.string() }),
  effect: 'write',
});

// 2. A chain: each step's output flows into later inputs through `ref`. A typo in a step id, a
//    path or a field (`ref('contact', 'emial')`) is a compile error right where it is written.
const emailByName = chain('email_by_name', {
  input: z.object({ name: z.string(), subject: z.string(), body: z.string() }),
})
  .tool('search', searchContacts, (ref) => ({ query: ref('input', 'name') }))
  .select('contact', (ref) => ({
    from: ref('search', 'contacts'),
    where: { name: { contains: ref('input', 'name') } },
    expect: 'one',
  }))
  .tool('send', sendEmail, (ref) => ({
    to: ref('contact', 'email'),
    subject: ref('input', 'subject'),
    body: ref('input', 'body'),
  }))
  .output((s) => ({ sentTo: s.results.contact.name, messageId: s.results.send.messageId }));

// 3. An invoker: how tools are really called (here: local functions; in production HTTP, MCP, …).
//    Given the tools first, each function's input and return are typed by its tool's schemas.
const directory = [
  { id: 'c1', name: 'Ada Lovelace', email: 'ada@example.com' },
  { id: 'c2', name: 'Alan Turing', email: 'alan@example.com' },
];
const invoker = functionInvoker([searchContacts, sendEmail], {
  search_contacts: async ({ query }) => ({
    contacts: directory.filter((c) => c.name.toLowerCase().includes(query.toLowerCase())),
  }),
  send_email: async ({ to }) => ({ messageId: `msg-${to.split('@')[0]}` }),
});

// 4. Run it. Results are data: check `status`, nothing throws for run-time failures.
const runner = createRunner({ invoker });
const result = await runner.run(emailByName, { name: 'ada', subject: 'Hi', body: 'Hello from chainkit' });
if (result.status === 'completed') console.log(`sent to ${result.output.sentTo} (${result.output.messageId})`);
else if (result.status === 'failed') console.log('failed:', result.error.userMessage);
console.log(formatTrace(result.trace));

const nobody = await runner.run(emailByName, { name: 'grace', subject: 'Hi', body: 'Hello from chainkit' });
if (nobody.status === 'failed') console.log(`\nno match → ${nobody.error.category}: ${nobody.error.userMessage}`);
await runner.close();
