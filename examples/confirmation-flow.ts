// Confirmation over HTTP: POST /delete returns a resume token; POST /confirm resumes it, once.
// Run: npx tsx examples/confirmation-flow.ts   (starts a server on 127.0.0.1, calls it, exits)
import { createServer, type IncomingMessage } from 'node:http';
import { createRunner, findAndDelete, taskChains, taskTools } from 'chainkit';
import { createTaskStore, fixtures } from 'chainkit/testing';

const store = createTaskStore({ users: fixtures.users });
// Share `secret` (and, with several instances, a Redis checkpoint store) so any instance can resume.
const runner = createRunner({
  invoker: store.invoker,
  tools: [...taskTools],
  chains: [...taskChains],
  secret: 'example-secret-change-me-please!',
});

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : {};
}

const server = createServer(async (req, res) => {
  // The authenticated user comes from your auth layer, never from the request body the model wrote.
  const context = { userId: String(req.headers['x-user-id']) };
  const input = await body(req);
  const result =
    req.url === '/delete'
      ? await runner.run(findAndDelete, { match: String(input.match ?? '') }, { context })
      : await runner.resume(String(input.resumeToken), { approved: input.approved === true }, { context });
  const status = result.status === 'failed' ? (result.error.category === 'confirmation' ? 409 : 422) : 200;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify(
      result.status === 'awaiting_confirmation'
        ? { status: result.status, prompt: result.confirmation.prompt, resumeToken: result.resumeToken }
        : result.status === 'failed'
          ? { status: result.status, code: result.error.code, message: result.error.userMessage }
          : { status: result.status, ...('output' in result && { output: result.output }) },
    ),
  );
});

await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const address = server.address();
const port = typeof address === 'object' && address !== null ? address.port : 0;
const post = async (path: string, payload: unknown) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { 'x-user-id': fixtures.alice },
    body: JSON.stringify(payload),
  });
  const reply: { status: string; resumeToken?: string } = JSON.parse(await res.text());
  return { http: res.status, ...reply };
};

const asked = await post('/delete', { match: 'groceries' });
console.log('1. agent asks to delete →', asked);
console.log('2. user says yes       →', await post('/confirm', { resumeToken: asked.resumeToken, approved: true }));
console.log('3. the same yes again  →', await post('/confirm', { resumeToken: asked.resumeToken, approved: true }));
const again = await post('/delete', { match: 'dentist' });
console.log('4. user says no        →', await post('/confirm', { resumeToken: again.resumeToken, approved: false }));

server.close();
await runner.close();
