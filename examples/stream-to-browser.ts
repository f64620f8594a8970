// Streaming a run to a browser over Server-Sent Events: POST /refunds starts a run and answers with
// its id; GET /runs/:id/events streams its events (a browser's EventSource resumes with Last-Event-ID).
// Here a real HTTP client plays the browser: it drops the connection half-way, reconnects with the
// last id it saw, and gets the rest — no event twice, none missing. Exits by itself.
// Run: npx tsx examples/stream-to-browser.ts
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { z } from 'zod';
import { chain, createRunner, defineTool, functionInvoker, memoryRunStore } from 'chainkit';
import { lastEventId, SSE_HEADERS, toSSE } from 'chainkit/sse';

const listRefunds = defineTool({
  name: 'list_refunds',
  description: 'Refunds owed to a customer',
  effect: 'read',
  input: z.object({ customerId: z.string() }),
  output: z.object({ orders: z.array(z.string()) }),
});
const issueRefunds = defineTool({
  name: 'issue_refunds',
  description: 'Refund each order',
  effect: 'write',
  input: z.object({ orders: z.array(z.string()) }),
  output: z.object({ refunded: z.number() }),
});
const refundAll = chain('refund_all', {
  input: z.object({ customerId: z.string() }),
  context: z.object({ userId: z.string() }), // who asked: the trusted context, from the app's session
})
  .tool('owed', listRefunds, (ref) => ({ customerId: ref('input', 'customerId') }))
  .tool('refund', issueRefunds, (ref) => ({ orders: ref('owed', 'orders') }))
  .build();

const runner = createRunner({
  invoker: functionInvoker([listRefunds, issueRefunds], {
    list_refunds: async () => ({ orders: ['o-1', 'o-2', 'o-3', 'o-4', 'o-5'] }),
    issue_refunds: async ({ orders }, call) => {
      for (const [i] of orders.entries()) {
        await new Promise((r) => setTimeout(r, 20)); // the payment provider, one order at a time
        call.progress({ done: i + 1, of: orders.length }); // "3 of 5 refunds issued…"
      }
      return { refunded: orders.length };
    },
  }),
  chains: [refundAll],
  stores: { runs: memoryRunStore() }, // redisStores(...) or postgresStores(...) to watch from any instance
});

/** Writes a web stream (what `toSSE` returns, also a `Response` body elsewhere) to a Node response. */
async function send(body: ReadableStream<Uint8Array>, res: ServerResponse): Promise<void> {
  const reader = body.getReader();
  res.on('close', () => void reader.cancel()); // the browser left
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
    if (!res.write(chunk.value)) await Promise.race([once(res, 'drain'), once(res, 'close')]); // a slow client: wait for it
  res.end();
}

/** The signed-in user (a real app reads its session cookie; here a header stands in for it). */
const signedIn = (req: { headers: Record<string, string | string[] | undefined> }): string | undefined => {
  const user = req.headers['x-user'];
  return typeof user === 'string' && user !== '' ? user : undefined;
};

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const userId = signedIn(req);
  if (!userId) {
    res.writeHead(401).end();
    return;
  }
  if (req.method === 'POST' && url.pathname === '/refunds') {
    // The result is recorded; the events are in the run store.
    const { runId } = runner.stream(refundAll, { customerId: 'c-42' }, { context: { userId } });
    res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ runId }));
    return;
  }
  const match = /^\/runs\/([^/]+)\/events$/.exec(url.pathname);
  if (req.method === 'GET' && match) {
    let runId: string;
    try {
      runId = decodeURIComponent(match[1]!);
    } catch {
      res.writeHead(400).end(); // a malformed escape: URIError
      return;
    }
    const gone = new AbortController();
    res.on('close', () => gone.abort()); // the browser left: the watch ends
    res.writeHead(200, SSE_HEADERS);
    // Only a run this user started, checked on every request (reconnects too): another user's run is `not_found`,
    // as an unknown one is (an SSE `error` event).
    const events = runner.watch(runId, {
      after: lastEventId(req.headers) ?? 0,
      signal: gone.signal,
      context: { userId },
    });
    void send(toSSE(events), res);
    return;
  }
  res.writeHead(404).end();
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const address = server.address();
const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

/** Reads an event stream like EventSource does; `stopAfter` drops the connection after that many events. */
async function listen(url: string, lastId: string | undefined, stopAfter = Infinity): Promise<string[]> {
  const res = await fetch(url, { headers: { 'x-user': 'alice', ...(lastId && { 'last-event-id': lastId }) } });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const ids: string[] = [];
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return ids;
    buffered += value;
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const id = /^id: (.*)$/m.exec(frame)?.[1];
      const type = /^event: (.*)$/m.exec(frame)?.[1];
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (!id || !type || !data) continue;
      ids.push(id);
      const event = z.object({ step: z.string().optional(), data: z.unknown() }).parse(JSON.parse(data));
      console.log(`  #${id} ${type}${event.step ? ` ${event.step}` : ''} ${JSON.stringify(event.data)}`);
      if (ids.length >= stopAfter) {
        await reader.cancel(); // the connection drops
        return ids;
      }
    }
  }
}

const { runId } = z
  .object({ runId: z.string() })
  .parse(await (await fetch(`${base}/refunds`, { method: 'POST', headers: { 'x-user': 'alice' } })).json());
console.log(`run ${runId} started; the browser listens:`);
const first = await listen(`${base}/runs/${runId}/events`, undefined, 5);
console.log(`  … connection lost after #${first.at(-1)}; reconnecting with Last-Event-ID: ${first.at(-1)}`);
const rest = await listen(`${base}/runs/${runId}/events`, first.at(-1));
const seen = [...first, ...rest].map(Number);
const inOrder = seen.every((seq, i) => seq === i + 1);
console.log(`${seen.length} events, each once and in order: ${inOrder}`);

server.closeAllConnections();
server.close();
await runner.close();
if (!inOrder) process.exitCode = 1;
